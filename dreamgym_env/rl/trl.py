"""An adapter for TRL's GRPO trainer: an LLM policy plays DreamGym episodes as its completions.

:class:`EnvRollout` is a ``rollout_func`` for ``trl.GRPOTrainer``: each prompt names a task,
and each completion is one multi-turn episode of that task. The model writes an action, the env
answers, its observation is appended (as environment tokens, kept out of the loss by
``env_mask``), and so on until the episode ends or ``max_turns``. The episode's total reward is
passed to the reward function :meth:`EnvRollout.reward` as ``env_reward``. TRL repeats each
prompt ``num_generations`` times, so the rollouts of one task form a GRPO group.

Needs the ``trl`` extra (``trl``, ``transformers``, ``datasets``). The hook is experimental in
TRL; this module follows TRL 1.16's ``RolloutFunc = Callable[[list, GRPOTrainer], dict]``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym

from dreamgym_env.domain import ACTION_SLOT, Domain
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.errors import ConfigurationError
from dreamgym_env.rl.groups import step_envs
from dreamgym_env.types import Task

DEFAULT_MAX_TURNS = 8
DEFAULT_MAX_ACTION_TOKENS = 24
DEFAULT_MAX_OBSERVATION_TOKENS = 256

PromptFormatter = Callable[[Task], str]
ObservationFormatter = Callable[[str, dict[str, Any]], str]
ActionParser = Callable[[str, dict[str, Any]], str]
"""Reads the action from the model's text, given the info of the step it acts in."""


def domain_prompt(domain: Domain) -> PromptFormatter:
    """The default prompt of a domain's tasks: its agent prompt, the first observation, then ``Action:``."""

    def format_prompt(task: Task) -> str:
        return f"{domain.agent_prompt}\n{task.initial_state}\nAction:"

    return format_prompt


def default_observation(observation: str, info: dict[str, Any]) -> str:
    """How an env observation is shown to the model between two actions."""
    return f"\n{observation}\nAction:"


def first_line(text: str, info: dict[str, Any] | None = None) -> str:
    """The action in a generated text: its first non-empty line, stripped."""
    return next((line.strip() for line in text.split("\n") if line.strip()), "")


def nearest_admissible(text: str, info: dict[str, Any]) -> str:
    """The admissible action closest to the text's first line (a free-text slot takes the line).

    Snapping generated text to the nearest admissible action, as text agents for ALFWorld-like
    envs do, lets even an untrained model act validly. Without ``admissible_actions`` the line
    is the action.
    """
    line = first_line(text)
    admissible = info.get("admissible_actions")
    if not admissible:
        return line
    from rapidfuzz import fuzz, process

    choice = process.extractOne(line, list(admissible), scorer=fuzz.ratio)
    action = str(choice[0]) if choice else str(admissible[0])
    return ACTION_SLOT.sub(lambda _: line.replace("[", " ").replace("]", " ").strip() or "item", action)


def _prompt_text(prompt: Any) -> str:
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list) and prompt and isinstance(prompt[-1], dict):
        content = prompt[-1].get("content", "")
        if isinstance(content, list):  # typed content blocks
            return "".join(block.get("text", "") for block in content if isinstance(block, dict))
        return str(content)
    raise ConfigurationError(f"EnvRollout needs text or conversational prompts, got {type(prompt).__name__}")


class EnvRollout:
    """A TRL GRPO ``rollout_func`` that plays episodes of DreamGym tasks.

    Arguments:
        make_env: builds one env (a Gymnasium id such as ``"DreamGym/WebShop-v0"`` with
            ``env_kwargs``, or a callable); one env per rollout slot, reused across batches.
            Synthetic envs sharing an experience model are stepped in one concurrent batch.
        tasks: the tasks that prompts can name (see :meth:`dataset`).
        max_turns: actions per episode at most.
        max_action_tokens: tokens the model may write per action.
        max_observation_tokens: env tokens kept per observation (the end is cut).
        format_prompt / format_observation: how tasks and observations are written for the model
            (default prompt: :func:`domain_prompt` of ``domain``).
        domain: the tasks' domain (a name or a ``Domain``; default: the first task's, registered).
        parse_action: reads the action from the model's text and the step's info
            (:func:`first_line`, or :func:`nearest_admissible` to snap to a valid action).

    Example:
        >>> rollout = EnvRollout("DreamGym/WebShop-v0", tasks, env_kwargs={"experience_model": m})  # doctest: +SKIP
        >>> trainer = GRPOTrainer(model=model, reward_funcs=EnvRollout.reward, args=config,
        ...                       train_dataset=rollout.dataset(), processing_class=tokenizer,
        ...                       rollout_func=rollout)  # doctest: +SKIP
    """

    def __init__(
        self,
        make_env: str | Callable[[], gym.Env],
        tasks: Sequence[Task],
        *,
        env_kwargs: dict[str, Any] | None = None,
        max_turns: int = DEFAULT_MAX_TURNS,
        max_action_tokens: int = DEFAULT_MAX_ACTION_TOKENS,
        max_observation_tokens: int = DEFAULT_MAX_OBSERVATION_TOKENS,
        format_prompt: PromptFormatter | None = None,
        format_observation: ObservationFormatter = default_observation,
        parse_action: ActionParser = first_line,
        domain: Domain | str | None = None,
    ) -> None:
        if max_turns < 1 or max_action_tokens < 1 or max_observation_tokens < 0:
            raise ConfigurationError(
                "max_turns and max_action_tokens must be >= 1, max_observation_tokens >= 0"
            )
        if not tasks:
            raise ConfigurationError("EnvRollout needs at least one task")
        if format_prompt is None:
            format_prompt = domain_prompt(get_domain(domain if domain is not None else tasks[0].domain))
        if isinstance(make_env, str):
            env_id, kwargs = make_env, dict(env_kwargs or {})
            self.make_env: Callable[[], gym.Env] = lambda: gym.make(env_id, **kwargs)
        else:
            self.make_env = make_env
        self.format_prompt = format_prompt
        self.format_observation, self.parse_action = format_observation, parse_action
        self.max_turns, self.max_action_tokens = max_turns, max_action_tokens
        self.max_observation_tokens = max_observation_tokens
        self.tasks_by_prompt = {format_prompt(task): task for task in tasks}
        if len(self.tasks_by_prompt) != len(tasks):
            raise ConfigurationError("two tasks have the same prompt; format_prompt must tell them apart")
        self.envs: list[gym.Env] = []

    def dataset(self) -> Any:
        """A ``datasets.Dataset`` with one row per task: ``prompt`` and ``task_id``."""
        from datasets import Dataset

        return Dataset.from_dict(
            {"prompt": list(self.tasks_by_prompt), "task_id": [t.id for t in self.tasks_by_prompt.values()]}
        )

    def task_of(self, prompt: Any) -> Task:
        """The task a prompt names."""
        text = _prompt_text(prompt)
        task = self.tasks_by_prompt.get(text)
        if task is None:
            raise ConfigurationError(f"prompt names no task of this rollout: {text[:120]!r}")
        return task

    @staticmethod
    def reward(completions: Sequence[Any], env_reward: Sequence[float], **kwargs: Any) -> list[float]:
        """The reward function for GRPOTrainer: each episode's total env reward."""
        return [float(r) for r in env_reward]

    # -- the hook ---------------------------------------------------------------------------
    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
        """Play one episode per prompt with ``trainer``'s model; TRL's rollout_func contract."""
        tokenizer = trainer.processing_class
        model = trainer.accelerator.unwrap_model(trainer.model)
        temperature = float(getattr(trainer, "temperature", 1.0) or 1.0)
        budget = int(getattr(trainer, "max_completion_length", 0) or 0) or None
        tasks = [self.task_of(p) for p in prompts]
        while len(self.envs) < len(tasks):
            self.envs.append(self.make_env())
        envs = self.envs[: len(tasks)]
        n = len(tasks)
        prompt_ids = [self._encode(tokenizer, _prompt_text(p)) for p in prompts]
        completion_ids: list[list[int]] = [[] for _ in range(n)]
        logprobs: list[list[float]] = [[] for _ in range(n)]
        env_mask: list[list[int]] = [[] for _ in range(n)]
        rewards, won, turns = [0.0] * n, [False] * n, [0] * n
        infos = [env.reset(options={"task": task})[1] for env, task in zip(envs, tasks, strict=True)]
        active = list(range(n))
        for _ in range(self.max_turns):
            if not active:
                break
            generated = self._generate(
                model, tokenizer, [prompt_ids[i] + completion_ids[i] for i in active], temperature
            )
            actions = []
            for i, (ids, lps) in zip(active, generated, strict=True):
                completion_ids[i] += ids
                logprobs[i] += lps
                env_mask[i] += [1] * len(ids)
                turns[i] += 1
                actions.append(self.parse_action(tokenizer.decode(ids, skip_special_tokens=True), infos[i]))
            results = step_envs([envs[i] for i in active], actions)
            still = []
            for i, (observation, reward, terminated, truncated, info) in zip(active, results, strict=True):
                rewards[i] += float(reward)
                infos[i] = info
                if terminated or truncated:
                    won[i] = bool(info.get("won", False))
                    continue
                feedback = self._encode(tokenizer, self.format_observation(observation, info))
                feedback = feedback[: self.max_observation_tokens]
                if (
                    budget is not None
                    and len(completion_ids[i]) + len(feedback) + self.max_action_tokens > budget
                ):
                    continue  # no room for another turn within max_completion_length
                completion_ids[i] += feedback
                logprobs[i] += [0.0] * len(feedback)
                env_mask[i] += [0] * len(feedback)
                still.append(i)
            active = still
        return {
            "prompt_ids": prompt_ids,
            "completion_ids": completion_ids,
            "logprobs": logprobs,
            "env_mask": env_mask,
            "env_reward": rewards,
            "env_won": [float(w) for w in won],
            "env_turns": turns,
        }

    @staticmethod
    def _encode(tokenizer: Any, text: str) -> list[int]:
        return list(tokenizer(text, add_special_tokens=False)["input_ids"])

    def _generate(
        self, model: Any, tokenizer: Any, contexts: list[list[int]], temperature: float
    ) -> list[tuple[list[int], list[float]]]:
        """Sample up to ``max_action_tokens`` for each context (one left-padded batch).

        Returns each continuation without padding and the log-probabilities of its tokens under
        the sampling distribution (temperature applied), up to and including an end-of-sequence.
        """
        import torch

        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        width = max(len(c) for c in contexts)
        device = next(model.parameters()).device
        input_ids = torch.tensor([[pad] * (width - len(c)) + c for c in contexts], device=device)
        attention = torch.tensor([[0] * (width - len(c)) + [1] * len(c) for c in contexts], device=device)
        with torch.no_grad():
            out = model.generate(
                input_ids=input_ids,
                attention_mask=attention,
                max_new_tokens=self.max_action_tokens,
                do_sample=True,
                temperature=temperature,
                top_k=0,
                top_p=1.0,
                pad_token_id=pad,
                eos_token_id=tokenizer.eos_token_id,
                output_scores=True,
                return_dict_in_generate=True,
            )
        new = out.sequences[:, width:]
        scores = torch.stack(out.scores, dim=1).float().log_softmax(dim=-1)  # (batch, steps, vocab)
        token_lp = scores.gather(-1, new.unsqueeze(-1)).squeeze(-1)
        results = []
        for row, lps in zip(new.tolist(), token_lp.tolist(), strict=True):
            end = len(row)
            if tokenizer.eos_token_id is not None and tokenizer.eos_token_id in row:
                end = row.index(tokenizer.eos_token_id) + 1
            results.append((row[:end], lps[:end]))
        return results
