"""OracleExperienceModel: the reference env behind the experience-model interface.

An analysis tool, never a default: it measures the pipeline (grounding, curriculum, training)
against a perfect model, and, with ``error_rate``, how training degrades as fidelity drops.
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter, OrderedDict
from collections.abc import Sequence
from typing import Any, Literal

import gymnasium as gym

from dreamgym_env.domain import ACTION_SLOT, Domain
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.errors import ConfigurationError, ExperienceModelError
from dreamgym_env.experience.base import ExperienceModel
from dreamgym_env.types import ExperienceRequest, Task, Transition, Usage, state_text

Corruption = Literal["action", "task", "reward"]
CORRUPTIONS: tuple[Corruption, ...] = ("action", "task", "reward")
DEFAULT_CACHE_SIZE = 100_000
_KEY = tuple[str, str, str]


class OracleExperienceModel(ExperienceModel):
    """Answers each request with what the domain's reference env really does. Analysis only.

    Not a model and never a default: it needs the reference env (ground truth), which a real
    use of the synthetic env does not have. Use it to test the pipeline with perfect
    transitions, as the upper bound of fidelity (:func:`~dreamgym_env.bench.fidelity.
    measure_fidelity` scores it 1.0), and, with ``error_rate``, to study how training degrades
    as transitions get worse.

    How it answers: when the reference env can be restored from a state (its ``restorable``
    is True, see :class:`~dreamgym_env.domain.ReferenceEnv`), it restores the request's state and steps
    the action; otherwise it replays the request's history from the task's initial state, which
    needs the whole episode in ``history`` (raise the env's ``history_len``). Answers are cached
    by ``(task id, state, action)`` (with replay, by the history's actions too).

    ``error_rate`` corrupts that share of the distinct requests, chosen by a hash of ``seed`` and
    the request (the same request always gets the same answer): the next state of another
    admissible action (``"action"``), the next state the action has in another task
    (``"task"``), or the true next state with the reward flipped (``"reward"``), one kind in
    three. A corrupted answer is always wrong and always a page the reference env can be
    restored from for the request's own task (it keeps that task's instruction), so
    the episode goes on from it; where the action does the same in another task, ``"task"``
    answers the step after filling the initial state's free-slot action (a search) with that
    task's instruction (else another action's state, else the reward flipped). The other task's
    instruction is rewritten to the request task's in a corrupted state. ``stats`` counts answers, cache hits and corruptions.

    Example:
        >>> from dreamgym_env.envs.synthetic import DreamEnv
        >>> env = DreamEnv("webshop", experience_model=OracleExperienceModel("webshop"))  # doctest: +SKIP
    """

    model_id = "oracle"

    def __init__(
        self,
        domain: str | Domain,
        *,
        error_rate: float = 0.0,
        seed: int = 0,
        env: gym.Env | None = None,
        cache_size: int = DEFAULT_CACHE_SIZE,
        env_kwargs: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        if not 0.0 <= error_rate <= 1.0:
            raise ConfigurationError(f"error_rate must be in [0, 1], got {error_rate}")
        self.domain = get_domain(domain)
        self.env = env if env is not None else self.domain.make_reference_env(**(env_kwargs or {}))
        self.error_rate, self.seed, self.cache_size = error_rate, seed, cache_size
        self._cache: OrderedDict[_KEY, Transition] = OrderedDict()
        self.stats: Counter[str] = Counter()
        self.restorable = bool(getattr(self.env.unwrapped, "restorable", False))

    def __repr__(self) -> str:
        return f"OracleExperienceModel(domain={self.domain.name!r}, error_rate={self.error_rate})"

    def describe(self) -> str:
        """The reference env it replays and the share of answers it corrupts."""
        return f"the oracle: the {self.domain.name} reference env, error rate {self.error_rate:g}"

    async def predict(self, requests: Sequence[ExperienceRequest]) -> list[Transition]:
        return [self.answer(request) for request in requests]

    # -- answers -----------------------------------------------------------------------------
    def answer(self, request: ExperienceRequest) -> Transition:
        """The (possibly corrupted) transition for one request."""
        start = time.perf_counter()
        self.stats["answers"] += 1
        where = (
            request.state
            if self.restorable
            else "\x1f".join([*(s.action for s in request.history), request.state])
        )
        key = (request.task.id, where, request.action)
        hit = self._cache.get(key)
        if hit is not None:
            self.stats["cache_hits"] += 1
            self._cache.move_to_end(key)
            return hit.model_copy(
                update={"usage": hit.usage.model_copy(update={"cached": True, "latency_s": 0.0})}
            )
        digest = hashlib.sha256(f"{self.seed}|{key[0]}|{key[1]}|{key[2]}".encode()).digest()
        corrupt = int.from_bytes(digest[:8], "big") / 2**64 < self.error_rate
        kind = CORRUPTIONS[digest[8] % len(CORRUPTIONS)] if corrupt else None
        transition = self._corrupted(kind, request, digest) if kind else None
        if transition is None:
            transition = self.true_transition(request)
        transition = transition.model_copy(
            update={"usage": Usage(model=self.model_id, latency_s=time.perf_counter() - start)}
        )
        self._cache[key] = transition
        if len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
        return transition

    def true_transition(self, request: ExperienceRequest) -> Transition:
        """What the reference env does after ``request.action`` (never corrupted, not cached)."""
        return self._step(request.task, request, request.action)

    def _step(
        self, task: Task, request: ExperienceRequest, action: str, state: str | None = None
    ) -> Transition:
        env: Any = self.env.unwrapped
        state = request.state if state is None else state
        ended = False
        try:
            if self.restorable:
                env.restore(task, self._text(request, state))
            else:
                ended = self._replay(env, task, request)
        except (ConfigurationError, ValueError) as exc:
            raise ExperienceModelError(
                f"the reference env cannot answer this request: {exc}", backend="oracle"
            ) from exc
        if ended:  # an earlier corrupted answer let the episode go on past its real end
            self.stats["replay_ended"] += 1
            return Transition(
                reasoning="oracle: the reference episode ended at an earlier step of this history",
                next_state=state,
                reward=0.0,
                terminated=True,
            )
        observation, reward, terminated, _, info = env.step(action)
        structured = request.state_schema is not None and info.get("action_valid", True)
        return Transition(
            reasoning=f"oracle: the {self.domain.name} reference env answered (action_valid="
            f"{info.get('action_valid', True)})",
            # In structured mode the answer is the abstract state (after an invalid action: unchanged).
            next_state=env.abstract_state.model_dump_json()
            if structured
            else (state if request.state_schema is not None else state_text(observation, info)),
            reward=float(reward),
            terminated=bool(terminated),
        )

    def _text(self, request: ExperienceRequest, state: str) -> str:
        """A request's state as the reference env shows it (structured states rendered)."""
        if request.state_schema is None:
            return state
        return self.domain.render_state(self.domain.parse_state(state))

    def _start(self, request: ExperienceRequest) -> str:
        """The task's initial state in the request's form (its text, or its abstract state's JSON)."""
        if request.state_schema is None:
            return request.task.initial_state
        return self.domain.initial_abstract_state(request.task).model_dump_json()

    def _replay(self, env: gym.Env, task: Task, request: ExperienceRequest) -> bool:
        """Replay the request's history from the task's start; True when it ended the episode."""
        start = request.history[0].state if request.history else request.state
        if self._text(request, start) != self._text(request, self._start(request)):
            raise ConfigurationError(
                "the history does not start at the task's initial state and this reference env cannot be "
                "restored from a page; raise the env's history_len to cover whole episodes"
            )
        env.reset(options={"task": task})
        for step in request.history:
            _, _, terminated, truncated, _ = env.step(step.action)
            if terminated or truncated:
                return True
        return False

    # -- corruption --------------------------------------------------------------------------
    def _corrupted(self, kind: Corruption, request: ExperienceRequest, digest: bytes) -> Transition | None:
        self.stats[f"corrupted_{kind}"] += 1
        true = self.true_transition(request)
        if kind == "reward":
            return true.model_copy(update={"reward": 1.0 - min(1.0, max(0.0, true.reward))})
        if kind == "action":
            other = self._other_action(request, digest)
            if other is not None:
                return self._step(request.task, request, other)
        other_task = self._other_task(request.task, digest)
        if other_task is None:
            return true.model_copy(update={"reward": 1.0 - min(1.0, max(0.0, true.reward))})
        answer = self._in_other_task(request, other_task)
        if answer is None or _same(answer, true):  # the action does the same in both tasks
            answer = self._other_task_search(request, other_task)
        if answer is None or _same(answer, true):
            other = self._other_action(request, digest)
            answer = self._step(request.task, request, other) if other is not None else None
        if answer is None or _same(answer, true):
            return true.model_copy(update={"reward": 1.0 - min(1.0, max(0.0, true.reward))})
        return answer

    def _in_other_task(self, request: ExperienceRequest, other_task: Task) -> Transition | None:
        """The step in ``other_task`` (the instruction rewritten in the state), on the request's task.

        The answer keeps the other task's state but shows the request task's instruction where
        it shows one, so the next request can be answered from it; ``None`` where the state
        cannot be continued from.
        """
        mine, theirs = request.task.instruction, other_task.instruction
        moved = request.model_copy(
            update={
                "task": other_task,
                "state": request.state.replace(mine, theirs),
                "history": [
                    step.model_copy(update={"state": step.state.replace(mine, theirs)})
                    for step in request.history
                ],
            }
        )
        try:
            answer = self._step(other_task, moved, request.action, moved.state)
        except ExperienceModelError:
            return None
        answer = answer.model_copy(update={"next_state": _retarget(answer.next_state, theirs, mine)})
        return answer if self._continuable(request, answer) else None

    def _other_task_search(self, request: ExperienceRequest, other_task: Task) -> Transition | None:
        """The state after the start's free-slot action filled for ``other_task`` (the model drifted there)."""
        start = self._start(request)
        if not self.restorable or not start:
            return None
        page = self._text(request, start)
        template = next(
            (a for a in self.domain.admissible_actions(page) or [] if ACTION_SLOT.search(a)), None
        )
        filled = self.domain.fill_slots(template, other_task, page) if template is not None else []
        if not filled:
            return None
        action = filled[0]
        try:
            answer = self._step(request.task, request.model_copy(update={"history": []}), action, start)
        except ExperienceModelError:
            return None
        return answer if self._continuable(request, answer) else None

    def _continuable(self, request: ExperienceRequest, answer: Transition) -> bool:
        """Whether the reference env can be restored from ``answer`` for the request's task (or need not be)."""
        if answer.terminated or not self.restorable:
            return True
        try:
            self.env.unwrapped.restore(request.task, self._text(request, answer.next_state))  # type: ignore[attr-defined]
        except (ConfigurationError, ValueError):
            return False
        return True

    def _other_action(self, request: ExperienceRequest, digest: bytes) -> str | None:
        if request.state_schema is not None:
            admissible = self.domain.state_admissible_actions(self.domain.parse_state(request.state))
        else:
            admissible = self.domain.admissible_actions(request.state)
        actions = list(admissible or [])
        choices = [a for a in actions if a.lower() != request.action.lower() and not ACTION_SLOT.search(a)]
        words = request.task.instruction.split()
        for template in (a for a in actions if ACTION_SLOT.search(a)):  # free text: one word of the task
            if words:
                choices.append(ACTION_SLOT.sub(words[digest[9] % len(words)], template))
        if not choices:
            return None
        return choices[int.from_bytes(digest[10:12], "big") % len(choices)]

    def _other_task(self, task: Task, digest: bytes) -> Task | None:
        tasks = [t for t in getattr(self.env.unwrapped, "tasks", ()) or () if t.id != task.id]
        if not tasks:
            return None
        return tasks[int.from_bytes(digest[12:16], "big") % len(tasks)]


def _retarget(state: str, theirs: str, mine: str) -> str:
    """``state`` with the lines that show ``theirs`` instruction (at their end) showing ``mine``.

    Only the instruction line is rewritten: text that merely contains the instruction (a search
    query typed from it) stays as the other task's episode had it.
    """
    return "\n".join(
        line[: -len(theirs)] + mine if theirs and line.endswith(theirs) else line
        for line in state.split("\n")
    )


def _same(a: Transition, b: Transition) -> bool:
    return (a.next_state, a.reward, a.terminated) == (b.next_state, b.reward, b.terminated)
