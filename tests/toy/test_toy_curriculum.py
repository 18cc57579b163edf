"""The curriculum on the toy pack: variance-based resets over toy tasks, and toy task generation."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import pytest

from dreamgym_env.curriculum import Curriculum, EndpointChat, TaskGenerator
from dreamgym_env.envs.synthetic import DreamEnv
from dreamgym_env.testing import ScriptedOpenAIServer, ok
from dreamgym_env.types import Task
from dreamgym_env.wrappers.curriculum_reset import CurriculumReset

from .pack import ToyDomain, ToyTaskVariations, goal_of, instruction_for


class Player:
    """The expert up to the vault; there it claims the treasure on WINNERS, every other time on COIN,
    else the decoy (an agent that has learnt some tasks and not others)."""

    def __init__(self, domain: ToyDomain, winners: set[str], coin: str) -> None:
        self.expert, self.winners, self.coin = domain.expert_policy(), winners, coin
        self.claims: Counter[str] = Counter()

    def __call__(self, observation: str, info: dict[str, Any]) -> str:
        action = self.expert(observation, info)
        task = info["task"]
        if not action.startswith("CLAIM"):
            return action
        self.claims[task.id] += 1
        wins = task.id in self.winners or (task.id == self.coin and self.claims[task.id] % 2 == 0)
        return action if wins else f"CLAIM {goal_of(task).decoy}"


def play(env: gym.Env, policy: Player) -> tuple[str, float]:
    observation, info = env.reset()
    task_id, total, done = info["task_id"], 0.0, False
    while not done:
        observation, reward, terminated, truncated, info = env.step(policy(observation, info))
        total, done = total + float(reward), terminated or truncated
    return task_id, total


def test_resets_follow_reward_variance_over_toy_tasks(toy, oracle):
    tasks = list(toy.tasks("train")[:5])
    winners, coin = {tasks[0].id, tasks[1].id}, tasks[2].id
    player = Player(toy, winners, coin)
    curriculum = Curriculum(tasks, explore=0.2, seed=0)
    env = CurriculumReset(DreamEnv(toy, oracle, max_steps=toy.max_episode_steps), curriculum)
    seen = Counter(play(env, player)[0] for _ in range(80))
    assert env.episodes == 80 and sum(r.episodes for r in curriculum.stats) == 80
    for task in tasks:
        record = curriculum.stats.get(task.id)
        assert record is not None
        wins = record.episodes if task.id in winners else record.episodes // 2 if task.id == coin else 0
        assert record.successes == wins
    assert curriculum.variance(coin) == 0.25
    assert seen[coin] / 80 > 0.6  # the only task whose outcome varies


@pytest.fixture
def chat(server: ScriptedOpenAIServer) -> Iterator[EndpointChat]:
    client = EndpointChat(base_url=server.url, model="writer", api_key=None, retry=1)
    yield client
    client.close()


def candidate(parent: Task, key_room: str, password: str, treasure: str, **changes: Any) -> dict[str, Any]:
    return {
        "parent_id": parent.id,
        "instruction": instruction_for(key_room, password, treasure),
        "key_room": key_room,
        "password": password,
        "treasure": treasure,
        **changes,
    }


def test_the_generator_validates_toy_variations(toy, server, chat, toy_task):
    seed = goal_of(toy_task)
    generator = TaskGenerator(chat, toy, concurrency=1)
    assert isinstance(generator.variations, ToyTaskVariations)
    good = candidate(toy_task, "cellar", "pumpkin", "crown")
    replies = [
        good,
        good,  # the same again: duplicate
        candidate(toy_task, seed.key_room, seed.password, seed.treasure),  # the seed itself
        {**candidate(toy_task, "hall", "kettle", "gem"), "password": None},  # no password
        candidate(toy_task, "hall", "kettle", "gem", instruction="Claim a gem from the big house please."),
        candidate(toy_task, "vault", "kettle", "gem"),  # the key behind the door it opens
        candidate(toy_task, "hall", "kettle", "dragon"),  # no such treasure
        candidate(toy_task, "hall", "open-sesame", "gem"),  # SAY cannot say it
    ]
    server.enqueue(ok({"tasks": replies}))
    generator.max_calls = 1
    report = generator.generate_sync([toy_task], 4)
    assert report.counts() == {"accepted": 1, "malformed": 2, "duplicate": 2, "infeasible": 3}
    reasons = " | ".join(str(r) for r in report.rejected)
    assert "'vault'" in reasons and "'dragon'" in reasons and "cannot win" in reasons
    (task,) = report.accepted
    assert task.parent_id == toy_task.id and task.domain == "toy" and task.metadata["generated"] is True
    assert goal_of(task).password == "pumpkin" and task.initial_state.startswith("Toy | hall")
    system, user = (m["content"] for m in server.requests[0]["messages"])
    assert "Toy house" in system and "key_room: library" in user and toy_task.instruction in user
    schema = server.requests[0]["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["tasks"]["items"]["required"][2:] == ["key_room", "password", "treasure"]
    # accepted means winnable: the expert wins it in the reference env
    env = toy.make_reference_env(tasks=[task], max_steps=toy.max_episode_steps)
    observation, info = env.reset(options={"task": task})
    expert, done = toy.expert_policy(), False
    while not done:
        observation, reward, terminated, truncated, info = env.step(expert(observation, info))
        done = terminated or truncated
    assert info["won"]


def seed_ids(body: dict[str, Any]) -> list[str]:
    return re.findall(r"^## Seed (\S+)$", body["messages"][1]["content"], re.MULTILINE)


def test_generated_toy_tasks_join_the_pool_and_play_on_the_oracle(toy, oracle):
    tasks = list(toy.tasks("train")[:4])
    player = Player(toy, {tasks[0].id}, tasks[1].id)
    words = iter(["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"])

    def writer(body: dict[str, Any]) -> dict[str, Any]:
        (seed_id,) = seed_ids(body)
        parent = next(t for t in tasks if t.id == seed_id)
        return {"tasks": [candidate(parent, "cellar", next(words), "ring") for _ in range(2)]}

    with ScriptedOpenAIServer(responder=writer) as server:
        chat = EndpointChat(base_url=server.url, model="writer", api_key=None)
        curriculum = Curriculum(tasks, generator=TaskGenerator(chat, toy, concurrency=1), seed=0)
        env = CurriculumReset(
            DreamEnv(toy, oracle, max_steps=toy.max_episode_steps),
            curriculum,
            lam=0.3,
            generate_every=20,
            generate_n=2,
            num_seeds=1,
        )
        for _ in range(20):
            play(env, player)
        report = env.wait_for_generation(timeout=30)
        assert report is not None and len(report.accepted) == 2 and server.requests_total == 1
        assert seed_ids(server.requests[0]) == [tasks[1].id]  # the task of highest reward variance
        generated = {t.id for t in curriculum.generated}
        assert len(generated) == 2
        counts = Counter(play(env, player)[0] for _ in range(40))
        assert 1 <= sum(counts[i] for i in generated) <= 0.3 * 40
        env.close()
        chat.close()
