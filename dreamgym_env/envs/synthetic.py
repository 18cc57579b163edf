"""DreamEnv: a Gymnasium env whose transitions come from an LLM experience model."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym

from dreamgym_env.envs.domain import ActionError, Domain, ParsedAction
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.errors import ConfigurationError, UnknownNameError
from dreamgym_env.experience.base import ExperienceModel
from dreamgym_env.spaces import UnicodeText
from dreamgym_env.types import Demonstration, ExperienceRequest, Step, Task, Transition

ContextProvider = Callable[[ExperienceRequest], Sequence[Demonstration]]
"""Returns demonstrations to add to a request before it reaches the model (replay grounding)."""
StepListener = Callable[[Task, Step, int], None]
"""Called with every finished step (valid or not) and its index in the episode, e.g. to write
it to a replay buffer."""
RemoveHook = Callable[[], None]
"""Removes the hook it was returned for; a second call does nothing."""

DEFAULT_HISTORY_LEN = 4


@dataclass
class PendingStep:
    """A step whose action was valid and whose transition the model has yet to predict."""

    action: ParsedAction
    request: ExperienceRequest


StepResult = tuple[str, float, bool, bool, dict[str, Any]]


class DreamEnv(gym.Env[str, str]):
    """A synthetic text environment whose next state and reward an experience model predicts.

    ## Description
    The env holds a task (instruction and initial state) of a domain pack and the episode so far.
    Each valid action is sent to the experience model together with the task, the last
    ``history_len`` steps, the current state and any demonstrations that context providers add
    (see :class:`~dreamgym_env.wrappers.ReplayGrounding`); the model reasons, then answers the
    next state, the reward and whether the episode ended.

    ## Observation Space
    ``UnicodeText``: the current state as abstract text in the domain's state format.

    ## Action Space
    ``UnicodeText``: any string. Valid strings follow the domain's grammar
    (``Domain.parse_action``). Any other string is an invalid action; it never raises.

    ## Rewards
    Outcome reward, as in the DreamGym paper: 1 at the step where the model judges the task
    completed, else 0 (clipped to [0, 1]; the model's reward counts only at the step that ends
    the episode). An invalid action gives 0.

    ## Starting State
    ``reset(seed=..., options={"task": ...})`` takes a :class:`~dreamgym_env.types.Task`, a task
    id, or a free instruction; without one it draws a task of ``split`` with the env's seeded RNG.

    ## Episode End
    Terminated when the action is one the domain declares terminal (``Domain.is_terminal_action``)
    or, in domains that let the model decide (``Domain.ends_only_on_terminal_actions`` False),
    when the model says the episode is done. Truncated after ``max_steps`` steps when
    set (``gym.make`` applies ``max_episode_steps`` through ``TimeLimit`` instead).

    ## Info
    ``task`` (Task), ``task_id``, ``action_valid``, ``source`` (``"synthetic"``),
    ``admissible_actions`` (where the domain has them), ``reasoning``, ``usage`` (tokens,
    latency, cache hit), ``won`` (reward 1 at the end), ``error`` (for invalid actions).

    ## Arguments
    | argument | default | meaning |
    |---|---|---|
    | ``domain`` | (required) | a registered domain's name, or any ``Domain`` (registered or not) |
    | ``experience_model`` | from config | the model backend (see ``dreamgym_env.experience``) |
    | ``max_steps`` | ``None`` | truncate after this many steps (``None``: no limit of its own) |
    | ``history_len`` | ``4`` | how many past steps the model sees |
    | ``split`` | ``"train"`` | where random tasks come from |
    | ``tasks`` | ``None`` | an explicit task list instead of the domain's split |
    | ``render_mode`` | ``None`` | ``"ansi"`` returns text, ``"human"`` prints it |

    ## Version History
    * v0: first release.
    """

    metadata = {"render_modes": ["ansi", "human"]}

    def __init__(
        self,
        domain: str | Domain,
        experience_model: ExperienceModel | None = None,
        *,
        max_steps: int | None = None,
        history_len: int = DEFAULT_HISTORY_LEN,
        split: str = "train",
        tasks: Sequence[Task] | None = None,
        render_mode: str | None = None,
        max_text_length: int = 16_384,
    ) -> None:
        self.domain = get_domain(domain)
        # A model the env chose itself is the env's to close; a passed one may be shared.
        self._owns_model = experience_model is None
        if experience_model is None:
            from dreamgym_env.experience.selection import default_experience_model

            experience_model = default_experience_model()
        if max_steps is not None and max_steps < 1:
            raise ConfigurationError(f"max_steps must be >= 1 or None, got {max_steps}")
        if history_len < 0:
            raise ConfigurationError(f"history_len must be >= 0, got {history_len}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ConfigurationError(f"render_mode must be one of {self.metadata['render_modes']}")
        self.experience_model = experience_model
        self.max_steps = max_steps
        self.history_len = history_len
        self.split = split
        self._tasks = list(tasks) if tasks is not None else None
        self.render_mode = render_mode
        self.observation_space = UnicodeText(max_text_length)
        self.action_space = UnicodeText(max_text_length)
        self.context_providers: list[ContextProvider] = []
        self.step_listeners: list[StepListener] = []
        self.task: Task | None = None
        self.state = ""
        self.steps: list[Step] = []
        self._done = True

    # -- hooks -------------------------------------------------------------------------------
    def add_context_provider(self, provider: ContextProvider) -> RemoveHook:
        """Add demonstrations to every request (used by wrappers, no subclassing needed).

        Returns the function that removes the provider again (a wrapper calls it on close).
        """
        self.context_providers.append(provider)
        return lambda: _remove(self.context_providers, provider)

    def add_step_listener(self, listener: StepListener) -> RemoveHook:
        """Be called with every finished step; returns the function that removes the listener."""
        self.step_listeners.append(listener)
        return lambda: _remove(self.step_listeners, listener)

    # -- tasks -------------------------------------------------------------------------------
    @property
    def tasks(self) -> Sequence[Task]:
        return self._tasks if self._tasks is not None else self.domain.tasks(self.split)  # type: ignore[arg-type]

    def resolve_task(self, spec: Task | str | None) -> Task:
        """Turn a Task, a task id or an instruction into a Task; ``None`` draws one at random."""
        if isinstance(spec, Task):
            return spec
        tasks = self.tasks
        if spec is None:
            if not tasks:
                raise ConfigurationError(f"domain {self.domain.name!r} has no tasks in split {self.split!r}")
            return tasks[int(self.np_random.integers(len(tasks)))]
        if not isinstance(spec, str):
            raise ConfigurationError(
                f"options['task'] must be a Task, a task id or an instruction, got {type(spec).__name__}"
            )
        by_id = {task.id: task for task in tasks}
        if spec in by_id:
            return by_id[spec]
        if " " not in spec.strip():  # looks like an id, not an instruction
            raise UnknownNameError("task id", spec, by_id)
        return self.domain.make_task(spec)

    # -- gymnasium API -----------------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        self.task = self.resolve_task((options or {}).get("task"))
        self.state = self.task.initial_state
        self.steps = []
        self._done = False
        info = {
            "task": self.task,
            "task_id": self.task.id,
            "source": "synthetic",
            **self._state_info(self.state),
        }
        return self.state, info

    def step(self, action: str) -> StepResult:
        pending = self.prepare_step(action)
        if isinstance(pending, tuple):
            return pending
        transition = self.experience_model.predict_one(pending.request)
        return self.finish_step(pending, transition)

    def prepare_step(self, action: Any) -> PendingStep | StepResult:
        """Parse ``action``; an invalid one is answered at once, a valid one becomes a request."""
        if self.task is None or self._done:
            raise ConfigurationError("call reset() before step() (the episode has ended or not begun)")
        text = action if isinstance(action, str) else repr(action)
        parsed: ParsedAction | ActionError = (
            self.domain.parse_action(action)
            if isinstance(action, str)
            else ActionError("an action must be a string")
        )
        if isinstance(parsed, ParsedAction):
            parsed = self.domain.validate_action(parsed, self.state) or parsed
        if isinstance(parsed, ActionError):
            feedback = self.domain.invalid_action_feedback(self.state, parsed)
            step = Step(state=self.state, action=text, next_state=feedback, action_valid=False)
            info = {"error": parsed.message, "reasoning": "", "usage": None}
            # The page itself is unchanged: the next action is judged against the real state.
            return self._record(step, info, observation=feedback, keep_state=True)
        request = ExperienceRequest(
            prompt=self.domain.prompt,
            task=self.task,
            history=self.steps[-self.history_len :] if self.history_len else [],
            state=self.state,
            action=parsed.text,
        )
        demonstrations = [demo for provider in self.context_providers for demo in provider(request)]
        if demonstrations:
            request = request.model_copy(update={"demonstrations": demonstrations})
        return PendingStep(action=parsed, request=request)

    def finish_step(self, pending: PendingStep, transition: Transition) -> StepResult:
        """Turn the model's transition for ``pending`` into Gymnasium's step tuple."""
        terminal_action = self.domain.is_terminal_action(pending.action)
        model_ends = transition.terminated and not self.domain.ends_only_on_terminal_actions
        terminated = terminal_action or model_ends
        reward = min(1.0, max(0.0, transition.reward)) if terminated else 0.0
        step = Step(
            state=self.state,
            action=pending.action.text,
            next_state=transition.next_state,
            reward=reward,
            done=terminated,
            reasoning=transition.reasoning,
        )
        info = {
            "reasoning": transition.reasoning,
            "usage": transition.usage.model_dump(),
            "model_reward": transition.reward,
            "demonstrations": len(pending.request.demonstrations),
        }
        return self._record(step, info, observation=transition.next_state, keep_state=False)

    def _record(self, step: Step, info: dict[str, Any], *, observation: str, keep_state: bool) -> StepResult:
        assert self.task is not None
        self.steps.append(step)
        if not keep_state:
            self.state = step.next_state
        for listener in self.step_listeners:
            listener(self.task, step, len(self.steps) - 1)
        truncated = self.max_steps is not None and len(self.steps) >= self.max_steps and not step.done
        self._done = step.done or truncated
        info.update(
            task=self.task,
            task_id=self.task.id,
            source="synthetic",
            action_valid=step.action_valid,
            won=step.done and step.reward >= 1.0,
            **self._state_info(self.state),
        )
        if self.render_mode == "human":
            print(self._render_step(step))
        return observation, step.reward, step.done, truncated, info

    def _state_info(self, state: str) -> dict[str, Any]:
        admissible = self.domain.admissible_actions(state)
        return {} if admissible is None else {"admissible_actions": admissible}

    def _render_step(self, step: Step) -> str:
        return f"> {step.action}\n{step.next_state}\n(reward {step.reward:g}{', done' if step.done else ''})"

    def render(self) -> str | None:
        text = self.state if not self.steps else self._render_step(self.steps[-1])
        if self.render_mode == "ansi":
            return text
        if self.render_mode == "human":
            print(text)
        return None

    def close(self) -> None:
        """Close the env, and the experience model if the env chose it (a passed one may be shared)."""
        if self._owns_model:
            self.experience_model.close()


def _remove(hooks: list[Any], hook: Any) -> None:
    """Remove ``hook`` (by identity) from ``hooks`` if it is still there."""
    for i, known in enumerate(hooks):
        if known is hook:
            del hooks[i]
            return
