from __future__ import annotations

import os

import pytest

pytest.importorskip("trl", reason="needs the extra that ships trl")
pytest.importorskip("transformers", reason="needs the extra that ships transformers")
pytest.importorskip("datasets", reason="needs the extra that ships datasets")
pytest.importorskip("tokenizers", reason="needs the extra that ships tokenizers")

from dreamgym_env.envs.registry import get_domain
from dreamgym_env.envs.synthetic import DreamEnv
from dreamgym_env.errors import ConfigurationError
from dreamgym_env.rl.tiny_lm import tiny_llama, train_tokenizer
from dreamgym_env.rl.trl import EnvRollout, domain_prompt, first_line

default_prompt = domain_prompt(get_domain("webshop"))
from dreamgym_env.testing import ScriptedExperienceModel
from dreamgym_env.types import ExperienceRequest, Transition

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")  # transformers renames, not ours


def two_searches(request: ExperienceRequest) -> Transition:
    """First search: a page that allows another search. Second: an item page. Buying it ends the
    episode, rewarded when the second query was long (WebShop episodes end only at Buy Now)."""
    if not request.history:
        return Transition(
            next_state=f"WebShop | search again\nInstruction: {request.task.instruction}\n[Search]"
        )
    if request.action != "click[Buy Now]":
        return Transition(next_state=f"WebShop | item\nInstruction: {request.task.instruction}\n[Buy Now]")
    query = request.history[-1].action[len("search[") : -1]
    return Transition(next_state="WebShop | done", reward=float(len(query) % 2), terminated=True)


def as_search(text: str, info: dict) -> str:
    if "click[Buy Now]" in info.get("admissible_actions", []):
        return "click[Buy Now]"
    return f"search[{first_line(text).replace('[', ' ').replace(']', ' ').strip() or 'x'}]"


@pytest.fixture
def setup():
    tasks = list(get_domain("webshop").tasks("train")[:2])
    model = ScriptedExperienceModel(two_searches)
    tokenizer = train_tokenizer(
        [default_prompt(t) for t in tasks] + ["search[red shoes]", "WebShop | done"], 300
    )
    rollout = EnvRollout(
        lambda: DreamEnv("webshop", model, max_steps=4),
        tasks,
        parse_action=as_search,
        max_turns=3,
        max_action_tokens=6,
        max_observation_tokens=48,
    )
    yield tasks, model, tokenizer, rollout
    model.close()


def test_one_grpo_step_on_cpu_with_a_tiny_model_and_env_rewards(setup, tmp_path, monkeypatch):
    import torch
    from trl import GRPOConfig, GRPOTrainer

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    tasks, model, tokenizer, rollout = setup
    lm = tiny_llama(tokenizer)
    calls = []

    def recording(prompts, trainer):
        out = rollout(prompts, trainer)
        calls.append((list(prompts), out))
        return out

    args = GRPOConfig(
        output_dir=str(tmp_path),
        per_device_train_batch_size=8,
        num_generations=4,
        max_completion_length=128,
        max_steps=1,
        learning_rate=5e-2,
        bf16=False,
        fp16=False,
        use_cpu=True,
        use_vllm=False,
        report_to=[],
        save_strategy="no",
        logging_steps=1,
        seed=0,
    )
    before = [p.detach().clone() for p in lm.parameters()]
    trainer = GRPOTrainer(
        model=lm,
        reward_funcs=EnvRollout.reward,
        args=args,
        train_dataset=rollout.dataset(),
        processing_class=tokenizer,
        rollout_func=recording,
    )
    trainer.train()
    assert trainer.state.global_step == 1
    prompts, out = calls[0]
    assert len(prompts) == 8 and len(set(prompts)) == 2  # two tasks, 4 rollouts each
    assert len(out["completion_ids"]) == len(out["logprobs"]) == len(out["env_mask"]) == 8
    for ids, lps, mask in zip(out["completion_ids"], out["logprobs"], out["env_mask"], strict=True):
        assert len(ids) == len(lps) == len(mask)
        assert 0 in mask and mask[0] == 1  # model tokens, then the env's page, then model tokens
        assert all(lp <= 0.0 for lp in lps) and all(
            lp == 0.0 for lp, m in zip(lps, mask, strict=True) if m == 0
        )
    assert set(out["env_reward"]) == {0.0, 1.0}  # mixed outcomes: some advantages are not zero
    assert model.calls == 24  # three model calls per episode: search, search, buy
    assert any(not torch.equal(a, b) for a, b in zip(before, lm.parameters(), strict=True))
    assert "reward" in trainer.state.log_history[0]


def test_prompts_map_to_tasks(setup):
    tasks, _, _, rollout = setup
    assert rollout.task_of(default_prompt(tasks[1])) == tasks[1]
    assert rollout.task_of([{"role": "user", "content": default_prompt(tasks[0])}]) == tasks[0]
    assert rollout.dataset()["task_id"] == [t.id for t in tasks]
    with pytest.raises(ConfigurationError, match="names no task"):
        rollout.task_of("hello")
    assert os.environ.get("HF_HUB_OFFLINE", "1")  # nothing here reaches the hub
