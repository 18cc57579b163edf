"""End to end: the oracle-backed synthetic WebShop, a fixed policy, the curriculum choosing resets."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from dreamgym_env.curriculum import Curriculum
from dreamgym_env.envs.oracle import OracleExperienceModel
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.envs.synthetic import DreamEnv
from dreamgym_env.envs.webshop.expert import WebShopExpert
from dreamgym_env.types import Task
from dreamgym_env.wrappers.curriculum_reset import CurriculumReset

EPISODES = 300


class CoinFlipExpert:
    """The WebShop expert, except that on chosen tasks it buys without picking options.

    On ``coin`` tasks it does so with probability 0.5 (success about 0.5), on ``never`` tasks
    always (success 0): every wanted option is then missing, so the purchase cannot win.
    """

    def __init__(self, coin: set[str], never: set[str], seed: int) -> None:
        self.coin, self.never = coin, never
        self.expert = WebShopExpert()
        self.rng = np.random.default_rng(seed)
        self.sabotage = False

    def start(self, task: Task) -> None:
        self.expert.reset()
        self.sabotage = task.id in self.never or (task.id in self.coin and self.rng.random() < 0.5)

    def __call__(self, observation: str, info: dict[str, Any]) -> str:
        if self.sabotage and info["state"].startswith("WebShop | item"):  # the Markov page says its kind
            return "click[Buy Now]"
        return self.expert(observation, info)


def expert_wins(env: DreamEnv, task: Task) -> bool:
    policy = WebShopExpert()
    obs, info = env.reset(options={"task": task})
    for _ in range(15):
        obs, reward, terminated, truncated, info = env.step(policy(obs, info))
        if terminated or truncated:
            return reward == 1.0
    return False


def test_curriculum_concentrates_resets_where_success_is_half():
    model = OracleExperienceModel("webshop")
    env = DreamEnv(get_domain("webshop"), model, max_steps=15)
    pool = [t for t in get_domain("webshop").tasks("train")[:40] if expert_wins(env, t)][:24]
    assert len(pool) == 24
    coin = {t.id for t in pool[:6]}
    never = {t.id for t in pool[6:12]}
    policy = CoinFlipExpert(coin, never, seed=0)
    curriculum = Curriculum(pool, explore=0.2, seed=0)
    wrapped = CurriculumReset(env, curriculum, generate_every=None)
    resets: list[str] = []
    for _ in range(EPISODES):
        obs, info = wrapped.reset()
        policy.start(info["task"])
        resets.append(info["task_id"])
        done = False
        while not done:
            obs, reward, terminated, truncated, info = wrapped.step(policy(obs, info))
            done = terminated or truncated
    stats = curriculum.stats
    assert all(stats.episodes(t.id) >= 1 for t in pool)  # every task was tried
    success = {t.id: stats.get(t.id).mean_reward for t in pool}
    assert all(success[i] == 0.0 for i in never) and all(success[t.id] == 1.0 for t in pool[12:])
    coin_success = sum(stats.get(i).successes for i in coin) / sum(stats.episodes(i) for i in coin)
    assert 0.35 < coin_success < 0.65
    late = Counter(resets[EPISODES // 3 :])
    share = sum(late[i] for i in coin) / sum(late.values())
    assert share > 0.6  # uniform resets would give 6 / 24 = 0.25
    assert {t.id for t in curriculum.seeds(4)} <= coin
    model.close()
