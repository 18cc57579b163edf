from __future__ import annotations

import gymnasium as gym
import numpy as np

from dreamgym_env.envs.vector import batch_infos
from dreamgym_env.scale.infos import unbatch_infos


def assert_same_batch(got: dict, want: dict) -> None:
    assert sorted(got) == sorted(want)
    for key, value in want.items():
        if isinstance(value, dict):
            assert_same_batch(got[key], value)
        else:
            assert got[key].dtype == value.dtype, key
            assert list(got[key]) == list(value), key


def test_unbatch_gives_back_each_sub_envs_info():
    infos = [
        {"task_id": "a", "won": True, "score": 0.5, "steps": 3, "usage": {"tokens": 4, "model": "m"}},
        {"task_id": "b", "won": False, "score": 1.0, "steps": 1, "error": "bad", "usage": {"tokens": 2}},
        {"task_id": "c", "won": False, "score": 0.0, "steps": 2, "actions": ["x", "y"]},
    ]
    split = unbatch_infos(batch_infos(infos), 3)
    assert split == infos
    assert [type(info["won"]) for info in split] == [bool, bool, bool]  # Python scalars, not numpy's
    assert_same_batch(batch_infos(split), batch_infos(infos))


def test_unbatch_reads_gymnasiums_own_layout():
    envs = gym.make_vec("DreamGym/WebShop-Ref-v0", num_envs=3, vectorization_mode="sync")
    _, infos = envs.reset(seed=0)
    _, _, _, _, infos = envs.step(["search[red shoes]", "jump", "click[nothing]"])
    split = unbatch_infos(infos, 3)
    assert [info["action_valid"] for info in split] == [True, False, False]
    assert "error" not in split[0] and split[1]["error"]
    assert_same_batch(batch_infos(split), infos)
    envs.close()


def test_a_key_without_a_mask_goes_to_every_sub_env():
    assert unbatch_infos({"x": np.array([1, 2])}, 2) == [{"x": 1}, {"x": 2}]
