"""Stepping several synthetic envs at once: one model batch, nothing recorded until every answer is in.

The vector env, group rollouts, the benchmark's lanes and the demo all step this way
(:func:`step_many`); a single env's ``step`` is the same phases for one env.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any, NoReturn, cast

from dreamgym_env.envs.synthetic import DreamEnv, PendingStep, ReadyStep, StepResult
from dreamgym_env.errors import ConfigurationError, DreamGymError, ExperienceModelError
from dreamgym_env.experience.backend import request_context
from dreamgym_env.experience.base import ExperienceModel
from dreamgym_env.types import ExperienceRequest, Transition

ErrorNamer = Callable[[DreamGymError, list[int], bool], None]
"""Called with an error about to be raised, the positions of the envs it concerns, and whether
the error named them itself (``False``: all the envs of the failed model batch)."""


def step_many(
    envs: Sequence[DreamEnv],
    actions: Sequence[Any],
    *,
    isolate: tuple[type[BaseException], ...] = (),
    on_error: ErrorNamer | None = None,
) -> list[StepResult | BaseException]:
    """Step each env with its action; the valid actions of envs sharing a model go as one ``predict`` batch.

    Every env is planned (invalid actions answered without a call), every model batch asked and
    every answer checked before any env records anything. A model failure
    (:class:`~dreamgym_env.errors.ExperienceModelError`) fails its own env alone: a failed batch
    is asked again one request at a time (a backend cancels a batch's other requests at its first
    failure), and the others step. An env whose request fails then ends its episode truncated
    (its ``on_model_error``, default ``"truncate"``), or, for errors of the types in ``isolate``
    (e.g. a benchmark that records them), gets its error in the returned list and stays as it was.
    Any other error, and a model failure of an env with ``on_model_error="raise"``, is raised with
    no env moved, so the same call can be retried; ``on_error`` sees it first with the positions
    it concerns.
    """
    if len(envs) != len(actions):
        raise ConfigurationError(f"got {len(actions)} actions for {len(envs)} envs")
    plans: list[PendingStep | ReadyStep] = []
    for i, (env, action) in enumerate(zip(envs, actions, strict=True)):
        try:
            plans.append(env._plan_step(action))
        except DreamGymError as exc:
            _raise(exc, [i], True, on_error)
    outcomes: list[ReadyStep | BaseException | None] = [
        p if isinstance(p, ReadyStep) else None for p in plans
    ]
    batches: dict[int, list[int]] = {}
    for i, plan in enumerate(plans):
        if isinstance(plan, PendingStep):
            batches.setdefault(id(envs[i].experience_model), []).append(i)
    for positions in batches.values():
        pending = {i: plans[i] for i in positions}
        # a batch with an env that truncates on a model failure learns which request failed
        truncates = any(envs[i].on_model_error == "truncate" for i in positions)
        caught: tuple[type[BaseException], ...] = (*isolate, ExperienceModelError) if truncates else isolate
        answers = _answers(envs[positions[0]].experience_model, pending, caught, on_error)  # type: ignore[arg-type]
        for i, answer in zip(positions, answers, strict=True):
            if isinstance(answer, BaseException):
                outcomes[i] = answer
                continue
            try:
                outcomes[i] = envs[i]._resolve_step(plans[i], answer)  # type: ignore[arg-type]
            except caught as exc:
                outcomes[i] = exc
            except DreamGymError as exc:
                _raise(exc, [i], True, on_error)
    for i, outcome in enumerate(outcomes):  # before any env records: a raise leaves all as they were
        failed = isinstance(outcome, ExperienceModelError) and not isinstance(outcome, isolate)
        if failed and envs[i].on_model_error == "raise":
            _raise(cast(ExperienceModelError, outcome), [i], True, on_error)
    return [
        _commit(env, outcome, isolate)
        for env, outcome in zip(envs, outcomes, strict=True)
        if outcome is not None
    ]


def _commit(
    env: DreamEnv, outcome: ReadyStep | BaseException, isolate: tuple[type[BaseException], ...]
) -> StepResult | BaseException:
    if isinstance(outcome, ReadyStep):
        return env._commit_step(outcome)
    if isinstance(outcome, ExperienceModelError) and not isinstance(outcome, isolate):
        return env._end_on_model_error(outcome)
    return outcome


def _answers(
    model: ExperienceModel,
    pending: dict[int, PendingStep],
    isolate: tuple[type[BaseException], ...],
    on_error: ErrorNamer | None,
) -> list[Transition | BaseException]:
    requests = [p.request for p in pending.values()]
    try:
        return list(model.predict_sync(requests))
    except isolate as exc:
        if len(requests) == 1:
            return [exc]
        answers = model.run(_each(model, requests))
        for answer in answers:
            if isinstance(answer, BaseException) and not isinstance(answer, isolate):
                raise answer from exc
        return answers
    except DreamGymError as exc:
        message = str(exc)
        named = [i for i, p in pending.items() if request_context(p.request) in message]
        _raise(exc, named or list(pending), bool(named), on_error)


async def _each(
    model: ExperienceModel, requests: Sequence[ExperienceRequest]
) -> list[Transition | BaseException]:
    """Each request alone, all concurrently: a transition or the request's own error."""
    answers = await asyncio.gather(*(model.predict([r]) for r in requests), return_exceptions=True)
    return [a if isinstance(a, BaseException) else a[0] for a in answers]


def _raise(exc: DreamGymError, positions: list[int], exact: bool, on_error: ErrorNamer | None) -> NoReturn:
    if on_error is not None:
        on_error(exc, positions, exact)
    raise exc
