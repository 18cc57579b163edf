"""DreamEnv: a Gymnasium env whose transitions come from an LLM experience model."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import EllipsisType
from typing import Any, Literal

import gymnasium as gym
import numpy as np
from pydantic import BaseModel

from dreamgym_env.domain import (
    ACTION_SLOT,
    SUPPLIES,
    ActionError,
    Domain,
    FieldSource,
    ParsedAction,
    RecordedLookup,
    RewardMode,
    StepResult,
    SuppliedFields,
    Supply,
    changed_content,
    changed_text_content,
    share_of_model,
)
from dreamgym_env.envs.models import env_experience_model
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.envs.tasksets import reset_task
from dreamgym_env.errors import ConfigurationError, ExperienceModelError, ModelOutputError, UnknownNameError
from dreamgym_env.experience.base import ExperienceModel
from dreamgym_env.experience.prompt import clip, utf8_safe
from dreamgym_env.experience.selection import served_trained_model
from dreamgym_env.spaces import UnicodeText
from dreamgym_env.types import Demonstration, ExperienceRequest, Step, Task, Transition, Usage

logger = logging.getLogger(__name__)

ContextProvider = Callable[[ExperienceRequest], Sequence[Demonstration]]
"""Returns demonstrations to add to a request before it reaches the model (replay grounding)."""
StepListener = Callable[[Task, Step, int], None]
"""Called with every finished step (valid or not) and its index in the episode, e.g. to write
it to a replay buffer."""
RemoveHook = Callable[[], None]
"""Removes the hook it was returned for; a second call does nothing."""

DEFAULT_HISTORY_LEN = 4
SHOWN_ACTION_CHARS = 200
"""How much of a non-string action's ``repr`` the recorded step keeps."""
StateMode = Literal["text", "structured"]
RewardSource = Literal["model", "rubric"]
OnModelError = Literal["truncate", "raise"]
"""What a step does when the model cannot answer it after its retries and re-asks: end the
episode truncated (``"truncate"``, the default) or raise the typed error (``"raise"``)."""


@dataclass
class PendingStep:
    """A step whose action was valid and whose transition the model has yet to predict."""

    action: ParsedAction
    request: ExperienceRequest
    supplied: SuppliedFields


def _nothing_written() -> dict[str, Any]:
    """``info``'s account of who wrote the next state, for a step the model did not answer."""
    return {"field_sources": {}, "world_lines": [], "model_share": None}


@dataclass
class ReadyStep:
    """A step whose outcome is known but that is not recorded yet (see :func:`~dreamgym_env.envs.stepping.step_many`)."""

    step: Step
    info: dict[str, Any]
    observation: str
    keep_state: bool
    abstract: BaseModel | None = None
    """The next state parsed (structured mode), so that recording it parses nothing again."""
    state_text: str = ""
    """The next state rendered (structured mode)."""
    admissible: list[str] | None = None
    """The next state's admissible actions, found once when the step was checked."""


class DreamEnv(gym.Env[str, str]):
    """A synthetic text environment whose next state and reward an experience model predicts.

    ## Description
    The env holds a task (instruction and initial state) of a domain pack and the episode so far.
    Each valid action is sent to the experience model together with the task, the last
    ``history_len`` steps, the current state and any demonstrations that context providers add
    (see :class:`~dreamgym_env.wrappers.ReplayGrounding`); the model reasons, then answers the
    next state, the reward and whether the episode ended.

    ## Observation Space
    ``UnicodeText``: what the agent sees of the current state, ``Domain.render_observation`` of
    its text in the domain's state format (the text itself, except where the real env prints
    pages differently: WebShop's ``' [SEP] '`` text). The model reads and writes the state
    (``env.state``); ``env.state_text`` is its text and ``env.observation`` what the agent sees.
    In structured mode (``state_mode="structured"``) the model works on the domain's abstract
    state (JSON of ``Domain.state_schema``, ``env.state``), rendered (``Domain.render_state``)
    into ``env.state_text``. A predicted
    state longer than ``max_text_length`` raises
    :class:`~dreamgym_env.errors.ModelOutputError` and records nothing (endpoint and local
    backends already re-ask answers over the answer schema's ``maxLength``), and so does a
    dead end: a next state whose admissible actions are none, on a step that does not end the
    episode (see Episode End for what the error does).

    ## Action Space
    ``UnicodeText``: any string. Valid strings follow the domain's grammar
    (``Domain.parse_action``). Any other string, and any value that is not a string, is an
    invalid action; it never raises. An admissible action taken as listed, with its free slot
    unfilled (``search[<query>]``), is invalid too. Lone surrogates (which UTF-8 cannot encode)
    are replaced with U+FFFD before anything else sees the action: the model, the recorded step
    and ``info`` all get the replaced text.

    ## Rewards
    Outcome reward, as in the DreamGym paper: 1 at the step where the model judges the task
    completed, else 0 (clipped to [0, 1]; the model's reward counts only at the step that ends
    the episode). With ``reward_mode="rubric"`` (structured mode) the domain scores the predicted
    state against the task's goal where it can (``Domain.rubric_reward``, of the kind ``rubric``
    names: the reference env's ``"outcome"`` or ``"score"``; ``info["reward_source"]`` says which
    one counted); in a domain whose episodes end exactly at a win
    (``Domain.ends_when_won``) the rubric's win also decides the episode end. An invalid action
    gives 0.

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
    ``admissible_actions`` (where the domain has them, from the state's text), ``state`` (the
    state's text, ``env.state_text``), ``reasoning``, ``usage`` (a dict: tokens,
    latency, cache hit; zero tokens and ``attempts`` 0 for an invalid action, which makes no model
    call), ``won`` (reward 1 at the end), ``error`` (why an action was invalid, or the model
    failure that truncated the episode: ``"ModelOutputError: ..."``), and who wrote the next
    state (``Domain.supplied_fields``): ``field_sources`` (structured mode: each top-level field's
    writer, ``"model"``, ``"carried"`` by a structural rule, or ``"pack"`` from its world data
    and code), ``world_lines`` (the pack's facts and verdict lines shown in the request) and
    ``model_share`` (the share of the state's changed characters the model wrote; ``None``
    when nothing changed or the model was not asked).

    ## Arguments
    | argument | default | meaning |
    |---|---|---|
    | ``domain`` | (required) | a registered domain's name, or any ``Domain`` (registered or not) |
    | ``experience_model`` | the pack's trained model | an ``ExperienceModel``, or a name: ``"local"`` (the pack's trained adapter on the embedded base), ``"local:base"`` (the prompted base), ``"local:<preset, .gguf or trained dir>"``, ``"endpoint[:<model>]"``, ``"oracle[:<error rate>]"``; default: an endpoint when one is configured, else ``"local"`` (see ``dreamgym_env.envs.models``) |
    | ``max_steps`` | ``None`` | truncate after this many steps (``None``: no limit of its own) |
    | ``history_len`` | ``4`` | how many past steps the model sees |
    | ``split`` | ``"train"`` | where random tasks come from |
    | ``tasks`` | ``None`` | an explicit task list instead of the domain's split |
    | ``render_mode`` | ``None`` | ``"ansi"`` returns text, ``"human"`` prints it |
    | ``max_text_length`` | ``16384`` | the longest observation and action (a longer predicted state is an error) |
    | ``state_mode`` | ``"text"`` | ``"structured"``: the model answers the domain's abstract state |
    | ``**model_settings`` | | settings of the model the env builds when none is passed, e.g. ``timeout_s``, ``deadline_s``, ``base_url``, ``model`` (see ``default_experience_model``); an unknown keyword is a ``ConfigurationError`` that lists the accepted ones |
    | ``reward_mode`` | ``"model"`` | ``"rubric"``: the domain's score of the predicted state where it has one |
    | ``rubric`` | ``"outcome"`` | what the rubric pays, as the reference env's ``reward``: ``"outcome"`` (1 for a win) or ``"score"`` (e.g. WebShop's purchase score) |
    | ``on_model_error`` | ``"truncate"`` | a step the model cannot answer ends the episode truncated; ``"raise"``: raises the typed error |
    | ``supply`` | ``"pack"`` | what fixes next-state fields before the model answers: ``"pack"`` the domain's rules, world data and scoring code; ``"replay"`` its structural rules and the next state of a recorded real transition of the same state and action, where the env's replay grounding (``ReplayGrounding``) holds one; ``"none"`` its structural rules only (the model writes the rest) |

    ## Version History
    * v0: first release.
    """

    metadata = {"render_modes": ["ansi", "human"], "render_fps": 4}

    def __init__(
        self,
        domain: str | Domain,
        experience_model: ExperienceModel | str | None = None,
        *,
        max_steps: int | None = None,
        history_len: int = DEFAULT_HISTORY_LEN,
        split: str = "train",
        tasks: Sequence[Task] | None = None,
        render_mode: str | None = None,
        max_text_length: int = 16_384,
        state_mode: StateMode = "text",
        reward_mode: RewardSource = "model",
        rubric: RewardMode = "outcome",
        on_model_error: OnModelError = "truncate",
        supply: Supply = "pack",
        **model_settings: Any,
    ) -> None:
        self.domain = get_domain(domain)
        if supply not in SUPPLIES:
            raise ConfigurationError(f"supply must be one of {', '.join(SUPPLIES)}, got {supply!r}")
        if on_model_error not in ("truncate", "raise"):
            raise ConfigurationError(f"on_model_error must be 'truncate' or 'raise', got {on_model_error!r}")
        if state_mode not in ("text", "structured"):
            raise ConfigurationError(f"state_mode must be 'text' or 'structured', got {state_mode!r}")
        if reward_mode not in ("model", "rubric"):
            raise ConfigurationError(f"reward_mode must be 'model' or 'rubric', got {reward_mode!r}")
        if rubric not in self.domain.reward_modes:
            raise ConfigurationError(
                f"rubric must be one of domain {self.domain.name!r}'s reward modes {self.domain.reward_modes}, "
                f"got {rubric!r}"
            )
        if state_mode == "structured" and self.domain.state_schema is None:
            raise ConfigurationError(
                f"domain {self.domain.name!r} has no state schema: use state_mode='text'"
            )
        if supply == "replay" and state_mode != "structured":
            raise ConfigurationError(
                "supply='replay' fills next-state fields from recorded states: it needs state_mode='structured'"
            )
        if reward_mode == "rubric" and state_mode != "structured":
            raise ConfigurationError(
                "reward_mode='rubric' scores abstract states: it needs state_mode='structured'"
            )
        self.state_mode: StateMode = state_mode
        self.reward_mode: RewardSource = reward_mode
        self.rubric: RewardMode = rubric
        experience_model, self._owns_model = env_experience_model(
            type(self), self.domain, experience_model, model_settings
        )
        trained = served_trained_model(experience_model)
        if trained is not None:
            trained.warn_if_stale(self.domain, state_mode)
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
        self.recorded_lookups: list[RecordedLookup] = []
        self.step_listeners: list[StepListener] = []
        self.task: Task | None = None
        self.state = ""
        """What the model sees of the current state: its text, or in structured mode its JSON."""
        self.state_text = ""
        """The current state's text in the domain's state format (in structured mode, rendered)."""
        self.observation = ""
        """What the agent sees of the current state (``Domain.render_observation`` of its text)."""
        self._abstract: BaseModel | None = None  # structured mode: ``state`` parsed once per step
        self._admissible: list[str] | None = None  # the current state's, found once per state
        self.on_model_error: OnModelError = on_model_error
        self.supply: Supply = supply
        self.model_failures = 0
        """Episodes this env ended truncated because the model could not answer a step."""
        self.steps: list[Step] = []
        self._done = True

    # -- hooks -------------------------------------------------------------------------------
    def add_context_provider(self, provider: ContextProvider) -> RemoveHook:
        """Add demonstrations to every request (used by wrappers, no subclassing needed).

        Returns the function that removes the provider again (a wrapper calls it on close).
        """
        self.context_providers.append(provider)
        return lambda: _remove(self.context_providers, provider)

    def add_recorded_lookup(self, lookup: RecordedLookup) -> RemoveHook:
        """Find recorded next states for ``supply="replay"``; returns the function that removes the lookup."""
        self.recorded_lookups.append(lookup)
        return lambda: _remove(self.recorded_lookups, lookup)

    def add_step_listener(self, listener: StepListener) -> RemoveHook:
        """Be called with every finished step; returns the function that removes the listener."""
        self.step_listeners.append(listener)
        return lambda: _remove(self.step_listeners, listener)

    # -- tasks -------------------------------------------------------------------------------
    @property
    def tasks(self) -> Sequence[Task]:
        return self._tasks if self._tasks is not None else self.domain.tasks(self.split)  # type: ignore[arg-type]

    def resolve_task(self, spec: Task | str | None, rng: np.random.Generator | None = None) -> Task:
        """Turn a Task, a task id or an instruction into a Task; ``None`` draws one with ``rng`` (default: the env's)."""
        if isinstance(spec, Task):
            return spec
        tasks = self.tasks
        if spec is None:
            if not tasks:
                raise ConfigurationError(f"domain {self.domain.name!r} has no tasks in split {self.split!r}")
            return tasks[int((rng or self.np_random).integers(len(tasks)))]
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
        if self.supply == "replay" and not self.recorded_lookups:
            raise ConfigurationError(
                "supply='replay' takes next-state fields from recorded transitions: wrap the env in "
                "ReplayGrounding(env, buffer) with a buffer of real episodes"
            )
        self.task = self.resolve_task(reset_task(options, type(self).__name__))
        if self.state_mode == "structured":
            self._set_state(self.domain.initial_abstract_state(self.task).model_dump_json())
        else:
            self._set_state(self.task.initial_state)
        self.steps = []
        self._done = False
        info = {
            "task": self.task,
            "task_id": self.task.id,
            "source": "synthetic",
            **self._state_info(),
        }
        return self.observation, info

    def _set_state(
        self,
        state: str,
        observation: str | None = None,
        abstract: BaseModel | None = None,
        text: str = "",
        admissible: list[str] | EllipsisType | None = ...,
    ) -> None:
        """Make ``state`` the current state.

        ``observation`` is the agent's view of it, ``abstract`` and ``text`` the state parsed and
        rendered and ``admissible`` its admissible actions, when the step already has them
        (``...``: found here).
        """
        self.state = state
        if self.state_mode == "structured":
            self._abstract = abstract if abstract is not None else self.domain.parse_state(state)
            self.state_text = text if abstract is not None else self.domain.render_state(self._abstract)
        else:
            self.state_text = state
        self._admissible = (
            self._admissible_of(self._abstract, self.state_text) if admissible is ... else admissible
        )
        self.observation = (
            self.domain.render_observation(self.state_text) if observation is None else observation
        )

    def _abstract_state(self) -> BaseModel:
        assert self._abstract is not None, "structured mode sets the abstract state with the state"
        return self._abstract

    def step(self, action: str) -> StepResult:
        planned = self._plan_step(action)
        if isinstance(planned, PendingStep):
            try:
                planned = self._resolve_step(planned, self.experience_model.predict_one(planned.request))
            except ExperienceModelError as exc:
                if self.on_model_error == "raise":
                    raise
                return self._end_on_model_error(exc)
        return self._commit_step(planned)

    # The phases of a step, which envs.stepping.step_many runs over many envs: nothing is
    # recorded until _commit_step, so a step that fails before it leaves the env as it was.
    def _plan_step(self, action: Any) -> PendingStep | ReadyStep:
        """Parse ``action``: an invalid one's step (recorded by :meth:`_commit_step`), a valid one's request."""
        if self.task is None or self._done:
            raise ConfigurationError("call reset() before step() (the episode has ended or not begun)")
        # Lone surrogates become U+FFFD: the request, the recorded step and the buffer stay UTF-8.
        text = utf8_safe(action) if isinstance(action, str) else shown_action(action)
        parsed: ParsedAction | ActionError = (
            self.domain.parse_action(text)
            if isinstance(action, str)
            else ActionError(f"an action must be a string, got {type(action).__name__}")
        )
        if isinstance(parsed, ParsedAction):
            parsed = (
                self._unfilled_template(parsed)
                or self.domain.validate_action(parsed, self.state_text)
                or parsed
            )
        if isinstance(parsed, ActionError):
            feedback = self.domain.invalid_action_feedback(self.state_text, parsed)
            # In structured mode the state itself is unchanged; the feedback is the observation.
            after = self.state if self.state_mode == "structured" else feedback
            # cut to what the grammar accepts: the history sent with later requests stays small
            shown = clip(text, self.domain.max_action_chars)
            step = Step(state=self.state, action=shown, next_state=after, action_valid=False)
            info = {
                "error": parsed.message,
                "reasoning": "",
                "usage": Usage(attempts=0).model_dump(),
                **_nothing_written(),
            }
            # The page itself is unchanged: the next action is judged against the real state.
            observation = self.domain.render_observation(feedback)
            return ReadyStep(step, info, observation=observation, keep_state=True)
        structured = self.state_mode == "structured"
        abstract = self._abstract_state() if structured else None
        supplied = self.domain.supplied_fields(
            self.task,
            self.state,
            parsed,
            abstract=abstract,
            supply=self.supply,
            recorded=self._recorded(parsed),
        )
        request = ExperienceRequest(
            prompt=self.domain.prompt,
            state_schema=self.domain.state_json_schema if structured else None,
            **supplied.request_fields(),
            task=self.task,
            history=self.steps[-self.history_len :] if self.history_len else [],
            state=self.state,
            action=parsed.text,
        )
        demonstrations = [demo for provider in self.context_providers for demo in provider(request)]
        if demonstrations:
            request = request.model_copy(update={"demonstrations": demonstrations})
        return PendingStep(action=parsed, request=request, supplied=supplied)

    def _recorded(self, action: ParsedAction) -> str | None:
        """With ``supply="replay"``: the next state of a recorded real transition of this state and action, if one is stored."""
        if self.supply != "replay" or self.task is None:
            return None
        found = (lookup(self.task, self.state, action.text) for lookup in self.recorded_lookups)
        return next((state for state in found if state is not None), None)

    def _unfilled_template(self, action: ParsedAction) -> ActionError | None:
        """An admissible action taken as listed, its free slot (``search[<query>]``) unfilled."""
        if ACTION_SLOT.search(action.text) is None:  # the common case: no list to build
            return None
        listed = {a.strip().lower(): a for a in self._admissible or [] if ACTION_SLOT.search(a)}
        template = listed.get(action.text.strip().lower())
        if template is None:
            return None
        slots = ", ".join(ACTION_SLOT.findall(template))
        return ActionError(
            f"{template} is a template from admissible_actions: replace {slots} with your own text"
        )

    def _resolve_step(self, pending: PendingStep, transition: Transition) -> ReadyStep:
        """Check the model's transition for ``pending`` and build its step, recording nothing."""
        text = next_state = transition.next_state
        field_sources: dict[str, FieldSource] = {}
        content = changed_text_content(self.state, text, pending.request.world)
        reward_source: RewardSource = "model"
        model_reward = transition.reward
        rubric: float | None = None
        abstract: BaseModel | None = None
        if self.state_mode == "structured":
            assert self.task is not None
            try:
                abstract = self.domain.parse_state(transition.next_state)
            except ValueError as exc:  # the backend checked the JSON schema; the model's own checks failed
                raise ModelOutputError(
                    f"task {self.task.id!r}: the next state is not a valid {self.domain.name} state: {exc}",
                    output=transition.next_state,
                ) from exc
            answered = abstract
            abstract = pending.supplied.settled(answered)
            field_sources = pending.supplied.sources(answered, abstract)
            content = changed_content(
                self._abstract_state().model_dump(), abstract.model_dump(), field_sources
            )
            text = self.domain.render_state(abstract)
            next_state = abstract.model_dump_json()  # canonical: equal states compare equal
            if self.reward_mode == "rubric":
                rubric = self.domain.rubric_reward(self.task, abstract, pending.action, self.rubric)
                if rubric is not None:
                    model_reward, reward_source = rubric, "rubric"
        terminal_action = self.domain.is_terminal_action(pending.action)
        model_ends = transition.terminated and not self.domain.ends_only_on_terminal_actions
        if rubric is not None and self.domain.ends_when_won:
            model_ends = rubric >= 1.0
        terminated = terminal_action or model_ends
        reward = min(1.0, max(0.0, model_reward)) if terminated else 0.0
        observation = self.domain.render_observation(text, reward if terminated else None)
        for shown in (text, observation):
            if not self.observation_space.contains(shown):
                # Never a state or observation outside the space; nothing is recorded, so a retry is clean.
                why = f"the next state ({len(shown)} characters) is outside the observation space {self.observation_space!r}"
                raise self._refused(why, shown, transition)
        admissible = self._admissible_of(abstract, text)
        if not terminated and admissible is not None and not admissible:  # a dead end
            why = f"the next state offers no action, but the episode goes on (action {pending.action.text[:80]!r} does not end it)"
            raise self._refused(why, next_state, transition)
        step = Step(
            state=self.state,
            action=pending.action.text,
            next_state=next_state,
            reward=reward,
            done=terminated,
            reasoning=transition.reasoning,
        )
        info = {
            "reasoning": transition.reasoning,
            "usage": transition.usage.model_dump(),
            "model_reward": transition.reward,
            "reward_source": reward_source,
            "demonstrations": len(pending.request.demonstrations),
            "field_sources": field_sources,
            "world_lines": list(pending.request.world),
            "model_share": share_of_model(content),
        }
        return ReadyStep(step, info, observation, False, abstract, text, admissible)

    def _commit_step(self, ready: ReadyStep) -> StepResult:
        """Record a planned or resolved step (history, state, listeners) and return its step tuple."""
        step, info, observation = ready.step, ready.info, ready.observation
        assert self.task is not None
        self.steps.append(step)
        if not ready.keep_state:
            self._set_state(step.next_state, observation, ready.abstract, ready.state_text, ready.admissible)
        for listener in self.step_listeners:
            listener(self.task, step, len(self.steps) - 1)
        truncated = self.max_steps is not None and len(self.steps) >= self.max_steps and not step.done
        self._done = step.done or truncated
        info.update(self._step_info(step.action_valid, won=step.done and step.reward >= 1.0))
        if self.render_mode == "human":
            print(self._render_step(step.action, observation, step))
        return observation, step.reward, step.done, truncated, info

    def _end_on_model_error(self, error: ExperienceModelError) -> StepResult:
        """End the episode truncated after a step the model could not answer; the step is not recorded."""
        assert self.task is not None
        self.model_failures += 1
        self._done = True
        logger.warning(
            "task %r: the experience model could not answer a step; the episode ends truncated: %s: %s",
            self.task.id,
            type(error).__name__,
            error,
        )
        info = {
            "error": f"{type(error).__name__}: {error}",
            "reasoning": "",
            "usage": Usage(attempts=error.attempts).model_dump(),
            **_nothing_written(),
            **self._step_info(action_valid=True, won=False),
        }
        return self.observation, 0.0, False, True, info

    def _refused(self, why: str, output: str, transition: Transition) -> ModelOutputError:
        """The error for a transition the env cannot take as the model answered it."""
        assert self.task is not None
        return ModelOutputError(
            f"task {self.task.id!r}: {why}",
            output=output,
            backend=transition.usage.model,
            attempts=transition.usage.attempts,
        )

    def _admissible_of(self, abstract: BaseModel | None, text: str) -> list[str] | None:
        """A state's admissible actions (``None``: the domain lists none), from its abstract form in structured mode."""
        if abstract is not None:
            return self.domain.state_admissible_actions(abstract)
        return self.domain.admissible_actions(text)

    def _step_info(self, action_valid: bool, won: bool) -> dict[str, Any]:
        """What every step's ``info`` says of the task and the state it leaves the env in."""
        assert self.task is not None
        return {
            "task": self.task,
            "task_id": self.task.id,
            "source": "synthetic",
            "action_valid": action_valid,
            "won": won,
            **self._state_info(),
        }

    def _state_info(self) -> dict[str, Any]:
        info: dict[str, Any] = {"state": self.state_text}
        # a copy: a caller that edits its info leaves the env's list as it was
        return info if self._admissible is None else {**info, "admissible_actions": list(self._admissible)}

    @staticmethod
    def _render_step(action: str, observation: str, step: Step) -> str:
        return f"> {action}\n{observation}\n(reward {step.reward:g}{', done' if step.done else ''})"

    def render(self) -> str | None:
        last = self.steps[-1] if self.steps else None
        text = self.observation if last is None else self._render_step(last.action, self.observation, last)
        if self.render_mode == "ansi":
            return text
        if self.render_mode == "human":
            print(text)
        return None

    def close(self) -> None:
        """Close the env, and the experience model if the env chose it (a passed one may be shared)."""
        if self._owns_model:
            self.experience_model.close()


def shown_action(action: object) -> str:
    """A non-string action as the recorded step shows it: its ``repr``, cut; never raises.

    A ``repr`` may raise (an int past Python's digit limit, a broken ``__repr__``) or be huge.
    """
    try:
        shown = repr(action)
    except Exception:
        shown = f"<{type(action).__name__} object>"
    return clip(utf8_safe(shown), SHOWN_ACTION_CHARS)


def _remove(hooks: list[Any], hook: Any) -> None:
    """Remove ``hook`` (by identity) from ``hooks`` if it is still there."""
    for i, known in enumerate(hooks):
        if known is hook:
            del hooks[i]
            return
