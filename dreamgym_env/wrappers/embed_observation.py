"""EmbedObservation: text observations as vectors of the task, the state and each candidate action."""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from dreamgym_env.domain import ObservationFeatures
from dreamgym_env.errors import ConfigurationError, SpaceMismatchError
from dreamgym_env.replay.embedders import Embedder, make_embedder
from dreamgym_env.types import state_text
from dreamgym_env.wrappers.choice_actions import (
    DEFAULT_MAX_ACTIONS,
    candidate_actions,
    domain_of,
    instruction_of,
    slot_filler,
)

CANDIDATE_FEATURES = (
    "present",
    "similarity",
    "label_recall",
    "label_matches",
    "context_precision",
    "context_coverage",
    "numbers_within",
    "times_taken",
    "is_last_action",
    "line_taken",
    "line_best",
    "position",
)
"""The per-candidate features, in column order (see :class:`EmbedObservation`)."""
PROGRESS_FEATURES = ("elapsed", "candidates", "last_action_valid", "steps_since_progress")
"""The episode-level features, in order."""
DEFAULT_CACHE_SIZE = 20_000
"""Embedded texts kept (an LRU cache): result rows and option lines recur across episodes."""
_WORD = re.compile(r"[a-z0-9]+(?:\.[0-9]+)?")
_NUMBER = re.compile(r"(?<![A-Za-z0-9.])\d+(?:\.\d+)?(?![A-Za-z0-9])")
_BRACKETED = re.compile(r"\[([^\[\]\n]+)\]")
_LABELLED = re.compile(r"^\s*[a-z_]+\s*\[(.+)\]\s*$", re.IGNORECASE | re.DOTALL)


@lru_cache(maxsize=65_536)
def words(text: str, stopwords: frozenset[str] = frozenset()) -> frozenset[str]:
    """Lower-case word tokens of ``text``, without ``stopwords``."""
    return frozenset(w for w in _WORD.findall(text.lower().replace("'", "")) if w not in stopwords)


@lru_cache(maxsize=65_536)
def _numbers(text: str) -> tuple[float, ...]:
    return tuple(float(n) for n in _NUMBER.findall(text))


def label_of(action: str) -> str:
    """The argument of a ``verb[argument]`` action (``open[red door]`` -> ``red door``), else the action.

    For envs without a domain; a DreamGym env's domain names an action's arguments itself
    (:meth:`~dreamgym_env.domain.Domain.action_arguments`).
    """
    match = _LABELLED.match(action)
    return match.group(1).strip() if match else action


def label_lines(observation: str) -> dict[str, str]:
    """Each ``[label]`` of an observation (lower-cased) with the first line that shows it."""
    out: dict[str, str] = {}
    for line in observation.split("\n"):
        for label in _BRACKETED.findall(line):
            out.setdefault(label.strip().lower(), line)
    return out


def context_of(action: str, observation: str | dict[str, str], arguments: Sequence[str] | None = None) -> str:
    """The observation line that shows an action's ``[label]`` (its first argument shown), else the action itself.

    ``observation`` may be given as its :func:`label_lines` (faster for many actions);
    ``arguments`` are what the action names (default: :func:`label_of`).
    """
    lines = label_lines(observation) if isinstance(observation, str) else observation
    for argument in arguments if arguments is not None else (label_of(action),):
        line = lines.get(argument.lower())
        if line is not None:
            return line
    return action


class EmbedObservation(gym.Wrapper):
    """Turn a text observation into a ``Dict`` of ``Box`` es: the task, the state and each candidate.

    Accepts an env with text observations (:class:`gymnasium.spaces.Text`) whose ``info`` has
    ``task`` and ``admissible_actions``, usually wrapped in
    :class:`~dreamgym_env.wrappers.ChoiceActions` (then its candidates and its ``max_actions``
    are used, so that row ``i`` describes the action that index ``i`` takes). Refuses other
    observation spaces with a :class:`~dreamgym_env.errors.SpaceMismatchError`. The action space
    is unchanged. The observation is (``d`` = ``embedder.dim``, ``K`` = ``max_actions``):

    * ``"task"`` ``(d,)``: the embedding of the task instruction;
    * ``"state"`` ``(d,)``: the embedding of the current page text (see below);
    * ``"actions"`` ``(K, d)``: for each candidate, the embedding of ``(context, action)``, where
      the context is the observation line showing the action's ``[label]`` (a result row, an
      option line), so that the policy can tell what each choice means; zeros past the last;
    * ``"features"`` ``(K, F)`` in ``[0, 1]``, columns :data:`CANDIDATE_FEATURES`: present (1 for
      real candidates); cosine similarity of the context to the instruction; the share of the
      label's words found in the instruction and their count (/4); the share of the context's
      words found in the instruction and of the instruction's words found in the context; no
      number in the context above the instruction's largest (for domains whose instructions set
      numeric bounds, such as a price limit; else 1); how often the action was already taken this episode (/3); whether it was the
      last action; whether an action shown on the same line was taken this episode (an option
      group already chosen); whether the label matches the most instruction words on its line
      ("rose gold" over "gold"); the position (/K);
    * ``"progress"`` ``(4,)`` in ``[0, 1]``, :data:`PROGRESS_FEATURES`: steps taken (/``horizon``),
      candidates shown (/K), whether the last action was valid, steps since the page last
      changed (/``horizon``).

    Words are compared lower-cased, without the domain's stop words. The domain (of a DreamGym
    env, wrapped or not) also sets the horizon (its ``max_episode_steps``) and whether numbers
    are bounds (:meth:`~dreamgym_env.domain.Domain.observation_features`); other envs take
    ``horizon`` or their spec's step limit and generic features. Everything is computed from the
    text the agent is given (instruction, page, candidate actions), never from the task's hidden
    goal. The page is ``info["state"]`` where the env reports it (WebShop's Markov page, whose
    ``[label]`` lines the real ``' [SEP] '`` text lacks), else the observation.

    Example:
        >>> env = EmbedObservation(ChoiceActions(gym.make("DreamGym/WebShop-Ref-v0")))  # doctest: +SKIP
        >>> obs, info = env.reset(seed=0)  # doctest: +SKIP
        >>> obs["actions"].shape, obs["features"][0, 0]  # doctest: +SKIP
        ((32, 256), 1.0)
    """

    def __init__(
        self,
        env: gym.Env,
        embedder: Embedder | str | None = "hashed",
        *,
        max_actions: int | None = None,
        horizon: int | None = None,
        cache_size: int = DEFAULT_CACHE_SIZE,
    ) -> None:
        if not isinstance(env.observation_space, spaces.Text):
            raise SpaceMismatchError(
                f"EmbedObservation accepts a Text observation space, got {type(env.observation_space).__name__}"
            )
        domain = domain_of(env)
        if horizon is None:
            horizon = (
                domain.max_episode_steps
                if domain is not None
                else getattr(env.spec, "max_episode_steps", None)
            )
        if horizon is None or horizon < 1:
            raise ConfigurationError(
                f"horizon must be >= 1, got {horizon} (pass horizon= for an env without a domain or a step limit)"
            )
        super().__init__(env)
        self.domain_features = domain.observation_features() if domain is not None else ObservationFeatures()
        self._fill = slot_filler(domain)
        self._arguments: Callable[[str], Sequence[str]] = (
            domain.action_arguments if domain is not None else lambda action: (label_of(action),)
        )
        if isinstance(env.action_space, spaces.Discrete):
            if max_actions is not None and max_actions != env.action_space.n:
                raise ConfigurationError(
                    f"max_actions={max_actions} differs from the wrapped Discrete({env.action_space.n})"
                )
            max_actions = int(env.action_space.n)
        self.max_actions = max_actions or DEFAULT_MAX_ACTIONS
        self.embedder = make_embedder(embedder)
        self.horizon = horizon
        self.cache_size = cache_size
        self._cache: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        d, k = self.embedder.dim, self.max_actions
        self.observation_space = spaces.Dict(
            {
                "task": spaces.Box(-1.0, 1.0, (d,), np.float32),
                "state": spaces.Box(-1.0, 1.0, (d,), np.float32),
                "actions": spaces.Box(-1.0, 1.0, (k, d), np.float32),
                "features": spaces.Box(0.0, 1.0, (k, len(CANDIDATE_FEATURES)), np.float32),
                "progress": spaces.Box(0.0, 1.0, (len(PROGRESS_FEATURES),), np.float32),
            }
        )
        self._taken: dict[str, int] = {}
        self._taken_lines: set[str] = set()
        self._last_action = ""
        self._steps = 0
        self._stuck = 0
        self._last_text = ""

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        observation, info = self.env.reset(seed=seed, options=options)
        self._taken, self._last_action, self._steps, self._stuck = {}, "", 0, 0
        self._taken_lines = set()
        self._last_text = observation
        return self.embed(observation, info, action_valid=True), info

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = self.env.step(action)
        text = str(info.get("action_text", action))
        self._taken[text] = self._taken.get(text, 0) + 1
        line = context_of(text, self._last_text, self._arguments(text))
        if line != text:
            self._taken_lines.add(line)
        self._last_action = text
        self._steps += 1
        self._stuck = self._stuck + 1 if observation == self._last_text else 0
        self._last_text = observation
        valid = bool(info.get("action_valid", True))
        return self.embed(observation, info, action_valid=valid), reward, terminated, truncated, info

    def _embed(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        """Embed pairs through an LRU cache: pages, result rows and options recur across steps."""
        cache = self._cache
        missing = list(dict.fromkeys(p for p in pairs if p not in cache))
        if missing:
            for pair, row in zip(missing, self.embedder.embed(missing), strict=True):
                cache[pair] = row
        rows = np.stack([cache[p] for p in pairs])
        for pair in pairs:
            cache.move_to_end(pair)
        while len(cache) > self.cache_size:
            cache.popitem(last=False)
        return rows

    def embed(
        self, observation: str, info: dict[str, Any], *, action_valid: bool = True
    ) -> dict[str, np.ndarray]:
        """The vector observation of ``observation`` with its ``info`` (see the class docstring)."""
        k = self.max_actions
        candidates = info.get("action_candidates")
        if candidates is None:
            candidates = candidate_actions(info, k, self._fill, observation)
        candidates = list(candidates)[:k]
        instruction = instruction_of(info)
        stopwords = self.domain_features.stopwords
        page = state_text(observation, info)  # the labelled lines, where the agent sees another text
        lines = label_lines(page)
        arguments = [self._arguments(action) for action in candidates]
        contexts = [
            context_of(action, lines, named) for action, named in zip(candidates, arguments, strict=True)
        ]
        rows = self._embed([(instruction, ""), (page, ""), *zip(contexts, candidates, strict=True)])
        n = len(candidates)
        task_vec, state_vec = rows[0], rows[1]
        actions = np.zeros((k, self.embedder.dim), dtype=np.float32)
        actions[:n] = rows[2:]
        features = np.zeros((k, len(CANDIDATE_FEATURES)), dtype=np.float32)
        goal_words = words(instruction, stopwords)
        bound = max(_numbers(instruction), default=None) if self.domain_features.numeric_bounds else None
        labels = [
            words(" ".join(named) or action, stopwords)
            for action, named in zip(candidates, arguments, strict=True)
        ]
        matches = [len(label & goal_words) for label in labels]
        best: dict[str, int] = {}
        for context, count in zip(contexts, matches, strict=True):
            best[context] = max(best.get(context, 0), count)
        for i, (action, context) in enumerate(zip(candidates, contexts, strict=True)):
            label, ctx = labels[i], words(context, stopwords)
            shared = ctx & goal_words
            numbers = _numbers(context) if context != action else ()
            features[i] = (
                1.0,
                float(rows[2 + i] @ task_vec),
                matches[i] / len(label) if label else 0.0,
                min(matches[i], 4) / 4,
                len(shared) / len(ctx) if ctx else 0.0,
                len(shared) / len(goal_words) if goal_words else 0.0,
                float(bound is None or all(x <= bound + 1e-9 for x in numbers)),
                min(self._taken.get(action, 0), 3) / 3,
                float(action == self._last_action),
                float(context in self._taken_lines),
                float(matches[i] > 0 and matches[i] == best[context]),
                i / k,
            )
        np.clip(features, 0.0, 1.0, out=features)
        progress = np.array(
            [
                min(self._steps, self.horizon) / self.horizon,
                n / k,
                float(action_valid),
                min(self._stuck, self.horizon) / self.horizon,
            ],
            dtype=np.float32,
        )
        return {
            "task": np.clip(task_vec, -1.0, 1.0).astype(np.float32),
            "state": np.clip(state_vec, -1.0, 1.0).astype(np.float32),
            "actions": np.clip(actions, -1.0, 1.0),
            "features": features,
            "progress": progress,
        }
