"""Train an LLM policy with TRL's GRPO on a DreamGym env: each completion is one episode.

Each prompt names a WebShop task; TRL repeats it ``num_generations`` times, and the rollout
function plays each copy as a multi-turn episode (the model's actions, the env's pages in
between, kept out of the loss). The episode's reward is the GRPO reward, normalised within the
group of rollouts of the same task. The experience model is the one ``gym.make`` gives: an
endpoint where ``DREAMGYM_BASE_URL`` is set, else the pack's trained model, run offline.

    python examples/trl_grpo.py                                   # a tiny random policy, offline
    python examples/trl_grpo.py --model oracle                    # the reference env as the model (analysis)
    python examples/trl_grpo.py --policy-model /path/to/local/hf/model --steps 50
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import dataclass, field, fields
from typing import Any

import gymnasium as gym

import dreamgym_env  # noqa: F401  (registers the DreamGym ids)
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.rl.sim2real import RewardKind, make_experience_model
from dreamgym_env.rl.tiny_lm import tiny_llama, train_tokenizer
from dreamgym_env.rl.trl import EnvRollout, domain_prompt, nearest_admissible


@dataclass
class Options:
    env_id: str = field(default="DreamGym/WebShop-v0", metadata={"help": "Gymnasium id the policy plays"})
    model: str = field(
        default="auto",
        metadata={
            "help": "experience model of a synthetic id: auto (what gym.make gives), oracle, endpoint, local"
        },
    )
    error_rate: float = field(default=0.0, metadata={"help": "the oracle's share of corrupted transitions"})
    reward: str = field(
        default="score", metadata={"help": "score (WebShop's purchase score) or outcome (1 if completed)"}
    )
    policy_model: str = field(
        default="", metadata={"help": "a local Hugging Face model directory (empty: a tiny random Llama)"}
    )
    num_tasks: int = field(default=8, metadata={"help": "training tasks (prompts)"})
    num_generations: int = field(default=4, metadata={"help": "rollouts per task: the GRPO group size"})
    batch_size: int = field(default=8, metadata={"help": "completions per optimisation step"})
    steps: int = field(default=2, metadata={"help": "GRPO optimisation steps"})
    max_turns: int = field(default=6, metadata={"help": "actions per episode at most"})
    max_completion_length: int = field(
        default=512, metadata={"help": "tokens per episode (actions and pages)"}
    )
    learning_rate: float = field(default=1e-4, metadata={"help": "AdamW learning rate"})
    output_dir: str = field(default="runs/trl_grpo", metadata={"help": "where TRL writes its files"})
    seed: int = field(default=0, metadata={"help": "seed of the model and the trainer"})


def parse_options() -> Options:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    for f in fields(Options):
        parser.add_argument(
            f"--{f.name.replace('_', '-')}", type=type(f.default), default=f.default, help=f.metadata["help"]
        )
    return Options(**vars(parser.parse_args()))


def main(options: Options) -> list[dict]:
    # -- setup --------------------------------------------------------------------------------
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    class PrintEachStep(TrainerCallback):
        """A line as each GRPO step ends: a step plays num_tasks x num_generations episodes."""

        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.started = time.perf_counter()

        def on_log(
            self, args: Any, state: Any, control: Any, logs: dict | None = None, **kwargs: Any
        ) -> None:
            if logs and "reward" in logs:
                print(
                    f"step {state.global_step}/{state.max_steps}: mean episode reward {logs['reward']:.3f} "
                    f"(group std {logs['reward_std']:.3f}), {time.perf_counter() - self.started:.0f} s"
                )

    domain = get_domain(gym.spec(options.env_id).kwargs["domain"])  # every DreamGym id names its pack
    tasks = list(domain.tasks("train")[: options.num_tasks])
    reward: RewardKind = "score" if options.reward == "score" else "outcome"
    env_kwargs: dict = {"max_episode_steps": options.max_turns}
    experience_model = None
    if gym.spec(options.env_id).entry_point == "dreamgym_env.envs.synthetic:DreamEnv":
        experience_model = make_experience_model(
            options.model, domain.name, error_rate=options.error_rate, reward=reward, seed=options.seed
        )
        env_kwargs["experience_model"] = experience_model  # one model, shared by every rollout's env
        print(f"experience model: {experience_model.describe()}")
    else:
        print(f"experience model: none, {options.env_id} is the reference env")
        if reward == "score":
            env_kwargs["reward"] = "score"
    if options.policy_model:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(options.policy_model, local_files_only=True)
        policy = AutoModelForCausalLM.from_pretrained(options.policy_model, local_files_only=True)
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
    else:  # an untrained ~100k-parameter model: it shows that the pipeline runs, nothing more
        tokenizer = train_tokenizer(
            [domain_prompt(domain)(t) for t in tasks] + ["search[query] click[Buy Now]"], 512
        )
        policy = tiny_llama(tokenizer, seed=options.seed)
    rollout = EnvRollout(
        options.env_id,
        tasks,
        env_kwargs=env_kwargs,
        max_turns=options.max_turns,
        parse_action=nearest_admissible,
    )
    config = GRPOConfig(
        output_dir=options.output_dir,
        per_device_train_batch_size=options.batch_size,
        num_generations=options.num_generations,
        max_completion_length=options.max_completion_length,
        max_steps=options.steps,
        learning_rate=options.learning_rate,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        seed=options.seed,
        bf16=False,
        fp16=False,
        use_cpu=True,
        use_vllm=False,
    )
    trainer = GRPOTrainer(
        model=policy,
        reward_funcs=EnvRollout.reward,  # type: ignore[arg-type]  # TRL wants list[float | None]
        args=config,
        train_dataset=rollout.dataset(),
        processing_class=tokenizer,
        rollout_func=rollout,
        callbacks=[PrintEachStep()],
    )

    # -- the loop -----------------------------------------------------------------------------
    started = time.perf_counter()
    trainer.train()

    # -- the result ---------------------------------------------------------------------------
    steps = [entry for entry in trainer.state.log_history if "reward" in entry]
    print(f"{len(steps)} GRPO steps in {time.perf_counter() - started:.0f} s")
    if experience_model is not None:
        experience_model.close()
    return steps


if __name__ == "__main__":
    main(parse_options())
