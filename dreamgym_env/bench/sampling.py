"""Reference transitions to measure fidelity on: sampled or recorded, then asked in text or structured mode, grounded or not.

:func:`sample_transitions` plays test-split episodes of a domain's reference env with the
expert, noisy and random policies, records them as abstract states, and draws ``n`` of their
valid steps, a third from each policy. :func:`recorded_samples` takes them from trajectories
recorded anywhere (an offline JSONL file), with no reference env. :func:`mode_transitions` turns the draw into the
requests of one measurement: structured (abstract states, the domain's schema) or text (the
same states rendered), without demonstrations or with ``k`` real transitions retrieved from a
replay buffer of expert episodes on the train split (:func:`replay_grounder`). Both modes ask
the same transitions, so their rows compare like with like.

Example:
    >>> domain = get_domain("webshop")
    >>> samples = sample_transitions(domain, 30, seed=0)  # doctest: +SKIP
    >>> text = mode_transitions(domain, samples, "text")  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dreamgym_env.agents import make_policy
from dreamgym_env.agents.rollouts import collect_trajectories
from dreamgym_env.bench.fidelity import (
    DEFAULT_HISTORY_LEN,
    ReferenceTransition,
    StateMode,
    reference_transitions,
)
from dreamgym_env.domain import Domain, RecordedLookup, SuppliedFields, Supply
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.errors import ConfigurationError
from dreamgym_env.replay.buffer import ExperienceReplayBuffer
from dreamgym_env.replay.grounding import ReplayGrounder
from dreamgym_env.types import ExperienceRequest, Step, Task, Trajectory

__all__ = [
    "GROUNDING_EPISODES",
    "GROUNDING_K",
    "POLICIES",
    "TEXT_DEMO_CHARS",
    "Sample",
    "as_text",
    "grounding_buffer",
    "mode_transitions",
    "recorded_samples",
    "rendered",
    "replay_grounder",
    "replay_lookup",
    "sample_transitions",
    "text_request",
]

POLICIES = ("expert", "noisy", "random")
"""The policies whose episodes are sampled, in equal shares."""
GROUNDING_EPISODES = 40
"""Expert episodes (train split) in the grounding buffer."""
GROUNDING_K = 4
"""Demonstrations per grounded request."""
TEXT_DEMO_CHARS = 160
"""Text mode: demonstration pages are compacted to this many characters (structured states: field
by field, see :func:`~dreamgym_env.replay.grounding.compact_structured_demonstration`)."""


@dataclass(frozen=True)
class Sample:
    """One sampled reference transition (structured) and where it comes from.

    ``episode``: the index of its episode among the ``policy``'s sampled episodes; ``step``: its
    index in that episode (invalid steps count).
    """

    reference: ReferenceTransition
    policy: str
    episode: int
    step: int

    @property
    def episode_key(self) -> str:
        """A name of the episode, unique within one sample (``"noisy-3"``)."""
        return f"{self.policy}-{self.episode}"


def rendered(domain: Domain, state: str) -> str:
    """An abstract state (its JSON) as the text the agent sees."""
    return domain.render_state(domain.parse_state(state))


def rendered_steps(domain: Domain, steps: Sequence[Step]) -> list[Step]:
    """The steps with their abstract states (before and after) rendered as text."""
    return [
        step.model_copy(
            update={"state": rendered(domain, step.state), "next_state": rendered(domain, step.next_state)}
        )
        for step in steps
    ]


def as_text(domain: Domain, trajectory: Trajectory) -> Trajectory:
    """The same episode with its abstract states rendered: the text-mode view."""
    return trajectory.model_copy(
        update={
            "steps": rendered_steps(domain, trajectory.steps),
            "metadata": {**trajectory.metadata, "state_mode": "text"},
        }
    )


def sample_transitions(
    domain: str | Domain,
    n: int,
    *,
    seed: int = 0,
    history_len: int = DEFAULT_HISTORY_LEN,
    progress: bool = False,
    supply: Supply = "pack",
    recorded: RecordedLookup | None = None,
) -> list[Sample]:
    """``n`` structured reference transitions from test-split episodes of the three :data:`POLICIES`.

    Each policy plays ``max(4, n // 3)`` episodes (seeded by ``seed``) and gives its share of
    ``n`` valid steps, drawn without replacement and kept in episode order; a policy with fewer
    valid steps gives them all. Requests carry ``history_len`` past steps and what ``supply``
    lets the domain fix, with ``"replay"`` what ``recorded`` finds
    (:func:`~dreamgym_env.bench.fidelity.reference_transitions`).
    """
    pack = get_domain(domain)
    if n < 1:
        raise ConfigurationError(f"n must be >= 1, got {n}")
    if pack.state_schema is None:
        raise ConfigurationError(
            f"domain {pack.name!r} has no abstract state to sample structured transitions of"
        )
    env = pack.make_reference_env(split="test", max_steps=pack.max_episode_steps)
    rng = np.random.default_rng(seed)
    chosen: list[Sample] = []
    try:
        for index, name in enumerate(POLICIES):
            policy = make_policy(name, pack, seed=seed + index)
            episodes = collect_trajectories(
                env,
                policy,
                max(4, n // 3),
                seed=seed + 100 * index,
                policy_name=name,
                progress=progress,
                state_mode="structured",
            )
            pool = reference_transitions(
                episodes, pack, history_len=history_len, supply=supply, recorded=recorded
            )
            where = [(e, i) for e, t in enumerate(episodes) for i, s in enumerate(t.steps) if s.action_valid]
            share = n // len(POLICIES) + (1 if index < n % len(POLICIES) else 0)
            picks = rng.choice(len(pool), size=min(share, len(pool)), replace=False)
            chosen += [Sample(pool[int(i)], name, *where[int(i)]) for i in sorted(picks)]
    finally:
        env.close()
    return chosen


def recorded_samples(
    trajectories: Sequence[Trajectory],
    domain: str | Domain,
    n: int | None = None,
    *,
    seed: int = 0,
    history_len: int = DEFAULT_HISTORY_LEN,
    supply: Supply = "none",
    recorded: RecordedLookup | None = None,
) -> list[Sample]:
    """Reference transitions of recorded trajectories, in their own state mode: no reference env is made.

    Every valid step, or ``n`` of them drawn without replacement (seeded by ``seed``) and kept in
    file order. Each sample's ``policy`` is its trajectory's (``"recorded"`` where it names
    none) and ``episode`` the trajectory's index in ``trajectories``. ``supply`` defaults to
    ``"none"``: a domain known only from its recordings has no world data of its own.
    """
    pack = get_domain(domain)
    if n is not None and n < 1:
        raise ConfigurationError(f"n must be >= 1, got {n}")
    pool: list[Sample] = []
    for index, trajectory in enumerate(trajectories):
        references = reference_transitions(
            [trajectory], pack, history_len=history_len, supply=supply, recorded=recorded
        )
        steps = [i for i, step in enumerate(trajectory.steps) if step.action_valid]
        policy = trajectory.policy or "recorded"
        pool += [Sample(r, policy, index, i) for r, i in zip(references, steps, strict=True)]
    if not pool:
        raise ConfigurationError("the trajectories hold no valid step to measure fidelity on")
    if n is None or n >= len(pool):
        return pool
    picks = np.random.default_rng(seed).choice(len(pool), size=n, replace=False)
    return [pool[int(i)] for i in sorted(picks)]


def text_request(domain: Domain, request: ExperienceRequest, supply: Supply = "pack") -> ExperienceRequest:
    """A structured request asked in text mode: its states (and its history's) rendered, no schema.

    What the domain looks up for it (given fields) is shown as world lines instead, as the text
    env's requests show it; with ``supply="none"`` nothing is.
    """
    state = rendered(domain, request.state)
    return request.model_copy(
        update={
            "state_schema": None,
            "state": state,
            "history": rendered_steps(domain, request.history),
            "given_fields": {},
            "world": domain.answer_fields(state, request.action, request.task, supply=supply)["world"],
        }
    )


def grounding_buffer(domain: Domain, episodes: int, mode: StateMode, seed: int) -> ExperienceReplayBuffer:
    """An in-memory buffer of ``episodes`` expert episodes on the train split, in ``mode``'s states."""
    env = domain.make_reference_env(split="train", max_steps=domain.max_episode_steps)
    try:
        trajectories = collect_trajectories(
            env,
            make_policy("expert", domain),
            episodes,
            seed=seed,
            policy_name="expert",
            progress=False,
            state_mode="structured",
        )
    finally:
        env.close()
    buffer = ExperienceReplayBuffer(None)
    for trajectory in trajectories:
        buffer.add_trajectory(
            trajectory if mode == "structured" else as_text(domain, trajectory), source="offline"
        )
    return buffer


def replay_grounder(
    domain: Domain,
    mode: StateMode,
    *,
    seed: int = 0,
    k: int = GROUNDING_K,
    episodes: int = GROUNDING_EPISODES,
) -> ReplayGrounder:
    """The grounder of a measurement: ``k`` demonstrations from :func:`grounding_buffer`, no write-back."""
    return ReplayGrounder(
        grounding_buffer(domain, episodes, mode, seed),
        k=k,
        write_back=False,
        state_chars=TEXT_DEMO_CHARS,
        next_state_chars=TEXT_DEMO_CHARS,
        action_arguments=domain.action_arguments,
    )


def replay_lookup(buffer: ExperienceReplayBuffer) -> RecordedLookup:
    """``supply="replay"``'s lookup in ``buffer``: the next state of a real transition stored for exactly a step's state and action."""
    grounder = ReplayGrounder(buffer, k=GROUNDING_K, write_back=False)

    def lookup(task: Task, state: str, action: str) -> str | None:
        found = grounder.recorded_next_state(task, state, action)
        grounder.clear_prefetched()  # no demonstrations follow: keep nothing
        return found

    return lookup


def mode_transitions(
    domain: Domain,
    samples: Sequence[Sample],
    mode: StateMode,
    *,
    grounder: ReplayGrounder | None = None,
    supply: Supply = "pack",
) -> list[ReferenceTransition]:
    """The samples as ``mode`` asks them (text: rendered), with ``grounder``'s demonstrations if given.

    ``supply`` is the one the samples were drawn with: a text request shows the pack's world
    lines only with ``"pack"``.
    """
    if mode not in ("structured", "text"):
        raise ConfigurationError(f"mode must be 'structured' or 'text', got {mode!r}")
    out: list[ReferenceTransition] = []
    for sample in samples:
        request, truth, supplied = sample.reference.request, sample.reference.truth, sample.reference.supplied
        if mode == "text":
            request = text_request(domain, request, supply)
            truth = truth.model_copy(update={"next_state": rendered(domain, truth.next_state)})
            supplied = SuppliedFields(world=tuple(request.world))  # a text state: only world lines
        if grounder is not None:
            request = request.model_copy(update={"demonstrations": grounder.demonstrations(request)})
        out.append(ReferenceTransition(request, truth, supplied))
    return out
