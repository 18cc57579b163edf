from __future__ import annotations

import re
from collections import Counter

import gymnasium as gym
import pytest

import dreamgym_env  # noqa: F401
from dreamgym_env.curriculum import Curriculum, EndpointChat, InstructionVariations, TaskGenerator
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.envs.synthetic import DreamEnv
from dreamgym_env.envs.vector import DreamVectorEnv
from dreamgym_env.errors import ConfigurationError
from dreamgym_env.testing import ScriptedExperienceModel, ScriptedOpenAIServer
from dreamgym_env.types import ExperienceRequest, Transition
from dreamgym_env.wrappers.curriculum_reset import CurriculumReset, CurriculumResetVector

TASKS = list(get_domain("webshop").tasks("train")[:6])
WINNERS = {TASKS[0].id, TASKS[1].id}
COIN = TASKS[2].id  # won every other time


class Shop:
    """Buy Now wins on WINNERS, alternately on COIN, never elsewhere; any other action shows an item."""

    def __init__(self) -> None:
        self.buys: Counter[str] = Counter()

    def __call__(self, request: ExperienceRequest) -> Transition:
        task = request.task
        if request.action.lower() == "click[buy now]":
            self.buys[task.id] += 1
            won = task.id in WINNERS or (task.id == COIN and self.buys[task.id] % 2 == 0)
            return Transition(next_state="WebShop | done", reward=float(won), terminated=True)
        return Transition(next_state=f"WebShop | item B0TEST\nInstruction: {task.instruction}\n[Buy Now]")


def policy(obs: str) -> str:
    return "search[it]" if obs.startswith("WebShop [SEP] Instruction:") else "click[Buy Now]"  # search page


@pytest.fixture
def shop_model():
    model = ScriptedExperienceModel(Shop())
    yield model
    model.close()


def run_episode(env: gym.Env, **reset_kwargs) -> tuple[str, float]:
    obs, info = env.reset(**reset_kwargs)
    task_id, total, done = info["task_id"], 0.0, False
    while not done:
        obs, reward, terminated, truncated, info = env.step(policy(obs))
        total += reward
        done = terminated or truncated
    return task_id, total


def test_resets_follow_the_curriculum_and_returns_are_recorded(shop_model):
    curriculum = Curriculum(TASKS, explore=0.2, seed=0)
    env = CurriculumReset(DreamEnv("webshop", shop_model), curriculum)
    seen = Counter(run_episode(env)[0] for _ in range(120))
    assert env.episodes == 120 and sum(r.episodes for r in curriculum.stats) == 120
    for task in TASKS:
        record = curriculum.stats.get(task.id)
        assert record is not None  # every task was tried
        wins = record.episodes if task.id in WINNERS else record.episodes // 2 if task.id == COIN else 0
        assert record.successes == wins
    assert curriculum.variance(COIN) == 0.25
    assert seen[COIN] / 120 > 0.6  # the only task with reward variance


def test_explicit_task_is_used_and_recorded(shop_model):
    curriculum = Curriculum(TASKS, seed=0)
    env = CurriculumReset(
        gym.make("DreamGym/WebShop-v0", state_mode="text", experience_model=shop_model), curriculum
    )
    task_id, total = run_episode(env, options={"task": TASKS[5]})
    assert task_id == TASKS[5].id and total == 0.0 and curriculum.stats.episodes(TASKS[5].id) == 1


def test_vector_env_gets_same_task_groups(shop_model):
    curriculum = Curriculum(TASKS, seed=0)
    envs = CurriculumResetVector(DreamVectorEnv(8, "webshop", shop_model), curriculum, group_size=4)
    assert isinstance(envs, CurriculumResetVector)
    for _ in range(5):
        obs, infos = envs.reset()
        ids = list(infos["task_id"])
        assert len(set(ids[:4])) == 1 and len(set(ids[4:])) == 1 and ids[0] != ids[4]
        obs, *_ = envs.step([policy(o) for o in obs])
        _, rewards, terminated, _, infos = envs.step([policy(o) for o in obs])
        assert terminated.all()
    assert envs.episodes == 40 and curriculum.stats.step == 40
    _, infos = envs.reset(options={"group_size": 2})
    assert len(set(infos["task_id"])) == 4


def test_vector_autoreset_episodes_are_recorded(shop_model):
    curriculum = Curriculum(TASKS, seed=1)
    envs = CurriculumResetVector(DreamVectorEnv(2, "webshop", shop_model), curriculum, generate_every=None)
    obs, infos = envs.reset()
    first = list(infos["task_id"])
    envs.step(["search[a]", "search[b]"])
    envs.step(["click[Buy Now]", "click[Description]"])  # sub-env 1's click is invalid: it goes on
    assert envs.episodes == 1 and curriculum.stats.episodes(first[0]) == 1
    obs, _, _, _, infos = envs.step(["ignored (autoreset)", "click[Buy Now]"])
    assert envs.episodes == 2 and curriculum.stats.episodes(first[1]) >= 1
    new_task = infos["task_id"][0]
    envs.step(["search[c]", "ignored"])
    envs.step(["click[Buy Now]", "search[d]"])
    assert curriculum.stats.episodes(new_task) >= 1 and envs.episodes == 3


@pytest.mark.skipif(
    not hasattr(DreamVectorEnv(1, "webshop", ScriptedExperienceModel()), "autoreset_options"),
    reason="DreamVectorEnv has no autoreset_options hook yet",
)
def test_autoreset_tasks_come_from_the_curriculum(shop_model):
    only = TASKS[3]
    curriculum = Curriculum([only], seed=0)
    envs = CurriculumResetVector(DreamVectorEnv(2, "webshop", shop_model, tasks=TASKS), curriculum)
    assert envs.chooses_autoreset_tasks
    envs.reset()
    for _ in range(3):
        _, _, _, _, infos = envs.step(["click[Buy Now]", "click[Buy Now]"])
    assert set(infos["task_id"]) == {only.id}


def test_misuse_is_refused(shop_model):
    curriculum = Curriculum(TASKS, seed=0)
    with pytest.raises(ConfigurationError, match="gymnasium Env"):
        CurriculumReset(object(), curriculum)
    with pytest.raises(ConfigurationError, match="must be a Curriculum"):
        CurriculumReset(DreamEnv("webshop", shop_model), TASKS)
    with pytest.raises(ConfigurationError, match="divide"):
        CurriculumResetVector(DreamVectorEnv(4, "webshop", shop_model), curriculum, group_size=3)
    with pytest.raises(ConfigurationError, match="use CurriculumResetVector"):
        CurriculumReset(DreamVectorEnv(2, "webshop", shop_model), curriculum)


def seed_ids(body: dict) -> list[str]:
    return re.findall(r"^## Seed (\S+)$", body["messages"][1]["content"], re.MULTILINE)


def test_generation_runs_in_the_background_and_joins_the_pool(shop_model):
    colours = ("teal", "coral", "ivory")

    def writer(body: dict) -> dict:
        (seed,) = seed_ids(body)
        return {
            "tasks": [
                {"parent_id": seed, "instruction": f"i need {c} ceramic mugs, set of {i + 2}"}
                for i, c in enumerate(colours)
            ]
        }

    with ScriptedOpenAIServer(responder=writer) as server:
        chat = EndpointChat(base_url=server.url, model="writer", api_key=None)
        generator = TaskGenerator(chat, InstructionVariations(get_domain("webshop")), concurrency=1)
        curriculum = Curriculum(TASKS, generator=generator, seed=0)
        env = CurriculumReset(
            DreamEnv("webshop", shop_model),
            curriculum,
            lam=0.25,
            generate_every=30,
            generate_n=3,
            num_seeds=1,
        )
        for _ in range(30):
            run_episode(env)
        report = env.wait_for_generation(timeout=30)
        assert report is not None and len(report.accepted) == 3 and server.requests_total == 1
        assert seed_ids(server.requests[0]) == [COIN]  # the task of highest reward variance
        assert {t.parent_id for t in curriculum.generated} == {COIN}
        counts = Counter(run_episode(env)[0] for _ in range(80))
        generated = sum(counts[t.id] for t in curriculum.generated)
        assert 10 <= generated <= 0.25 * 80  # reachable by reset, capped by lambda
        env.close()
        chat.close()
