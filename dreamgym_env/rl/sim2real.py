"""The sim-to-real experiment: real-env PPO vs DreamGym-PPO (synthetic only) vs DreamGym-S2R-PPO.

For each experience model (the oracle at each ``error_rate``, or one LLM backend), one agent is
trained in the synthetic env for ``synthetic_steps``, evaluated, then moved to the real env with
:meth:`~dreamgym_env.wrappers.SimToReal.switch` and trained on until it has spent
``s2r_real_steps`` real steps, and evaluated again. A reference agent is trained on the real env
alone for ``real_steps``. Every agent is evaluated on the real env's test split; runs go to a
process pool (``workers``), one per core.

The experiment adapts itself to the domain through the domain contract alone: the synthetic
env's state mode and history length (:func:`synthetic_settings`), the number of candidate
actions the policy chooses from (:func:`choose_max_actions`) and the default reward (the
domain's score only where its reference env pays it at the episode's end, as the synthetic env
does, :func:`score_paid_at_end`).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from multiprocessing import get_all_start_methods, get_context
from pathlib import Path
from typing import Any, Literal, cast

import gymnasium as gym
import numpy as np

from dreamgym_env.domain import ACTION_SLOT, Domain
from dreamgym_env.envs.models import experience_model_for, model_kind, pack_models
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.envs.synthetic import DEFAULT_HISTORY_LEN, DreamEnv, RewardSource, StateMode
from dreamgym_env.errors import ConfigurationError, UnknownNameError
from dreamgym_env.experience.base import ExperienceModel
from dreamgym_env.experience.selection import default_trained_model
from dreamgym_env.experience.trained import ADAPTER_SPEC, DISTILLED_DIR, TrainedModel
from dreamgym_env.types import Task
from dreamgym_env.wrappers.choice_actions import DEFAULT_MAX_ACTIONS

ALGOS = ("ppo",)
RewardKind = Literal["score", "outcome"]
DEFAULT_REAL_STEPS = 30_000
DEFAULT_EVAL_TASKS = 500
CURVE_WINDOW = 200
"""Episodes in the rolling success rate of the learning curves."""
PROBE_TASKS = 64
"""Train tasks sampled to choose the candidate count K (:func:`choose_max_actions`)."""
PROBE_STEPS = 10
"""Random steps taken in each of them."""
SCORE_PROBE_EPISODES = 5
"""Expert episodes that check where the reference env pays the score (:func:`score_paid_at_end`)."""
TABLE_COLUMNS = ("Method", "Experience model", "Real steps", "Synthetic steps", "Success (%)")


@dataclass(frozen=True)
class PPOSettings:
    """PPO hyperparameters of every run (sb3-contrib MaskablePPO with the candidate policy)."""

    n_envs: int = 8
    n_steps: int = 64
    batch_size: int = 128
    n_epochs: int = 4
    learning_rate: float = 2e-3
    gamma: float = 0.99
    ent_coef: float = 0.01
    embed_dim: int = 64
    max_actions: int | None = None
    """K, the candidate actions the policy chooses from (``Discrete(K)``); ``None``: chosen per
    domain by :func:`choose_max_actions` (at least 32, enough for the largest page seen)."""


@dataclass(frozen=True)
class Sim2RealConfig:
    """What to run. ``None`` step counts default to ``real_steps`` (synthetic) and a tenth of it (S2R).

    ``model``: ``"oracle"`` (the reference env behind the experience-model interface, corrupted
    at each of ``error_rates``), or an LLM backend: ``"endpoint"`` (configured by
    ``DREAMGYM_BASE_URL`` ...), ``"local"`` (the embedded model) or ``"auto"`` (the default
    choice), or any name the envs take (``"local:<trained or distilled directory>"``,
    ``"endpoint:<model>"``); a trained model's synthetic env speaks the state mode it learned
    (:func:`synthetic_settings`); ``error_rates`` apply to the oracle only. ``synthetic_reward``:
    ``"model"`` (the experience model's reward) or ``"rubric"`` (the domain's reward of the
    model's predicted state, of the kind ``reward`` names, as the real env pays it; structured
    synthetic states only; see ``DreamEnv(reward_mode=, rubric=)``). ``reward``: ``"score"`` trains on the
    domain's shaped score (where its reference env has one, ``Domain.reward_modes``),
    ``"outcome"`` on 1 for a completed task; ``None`` takes the score where the domain has one
    and its reference env pays it at the episode's end (:func:`score_paid_at_end`: the
    synthetic env pays a reward only at the end, so a score paid step by step could not be
    learnt from synthetic experience), else the outcome; success is always "task completed". ``domain``: a registered domain's name or any
    :class:`~dreamgym_env.domain.Domain` (registered or not; with ``workers`` > 1 it goes
    to the worker processes, so its class must be importable there).
    """

    domain: str | Domain
    algo: str = "ppo"
    real_steps: int = DEFAULT_REAL_STEPS
    synthetic_steps: int | None = None
    s2r_real_steps: int | None = None
    model: str = "oracle"
    error_rates: tuple[float, ...] = (0.0,)
    reward: RewardKind | None = None
    synthetic_reward: RewardSource = "model"
    eval_tasks: int = DEFAULT_EVAL_TASKS
    seed: int = 0
    workers: int = 2
    out_dir: Path = Path("runs/sim2real")
    ppo: PPOSettings = field(default_factory=PPOSettings)

    def __post_init__(self) -> None:
        if self.algo not in ALGOS:
            raise UnknownNameError("algorithm", self.algo, ALGOS)
        model_kind(self.model)
        modes = get_domain(self.domain).reward_modes
        if self.reward is None:
            score = "score" in modes and score_paid_at_end(self.domain)
            object.__setattr__(self, "reward", "score" if score else "outcome")
        if self.reward not in modes:
            raise ConfigurationError(
                f"reward must be one of domain {self.domain!r}'s reward modes {modes}, got {self.reward!r}"
            )
        if self.real_steps < 1 or self.eval_tasks < 1 or self.workers < 1:
            raise ConfigurationError("real_steps, eval_tasks and workers must be >= 1")
        if not self.error_rates or any(not 0.0 <= e <= 1.0 for e in self.error_rates):
            raise ConfigurationError(
                f"error_rates must be a non-empty list of values in [0, 1], got {self.error_rates}"
            )
        if self.model != "oracle" and self.error_rates != (0.0,):
            raise ConfigurationError("error_rates apply to model='oracle' only")
        if self.synthetic_reward not in ("model", "rubric"):
            raise ConfigurationError(
                f"synthetic_reward must be 'model' or 'rubric', got {self.synthetic_reward!r}"
            )
        if self.synthetic_reward == "rubric" and synthetic_settings(self).state_mode != "structured":
            raise ConfigurationError(
                f"synthetic_reward='rubric' scores structured states; {self.model!r} on {self.domain!r} "
                "gets text ones"
            )

    @property
    def synthetic_budget(self) -> int:
        return self.real_steps if self.synthetic_steps is None else self.synthetic_steps

    @property
    def s2r_budget(self) -> int:
        return max(1, self.real_steps // 10) if self.s2r_real_steps is None else self.s2r_real_steps


@dataclass
class RunResult:
    """One trained agent and its success on the real env's test split."""

    method: str
    model: str
    error_rate: float | None
    real_steps: int
    synthetic_steps: int
    success: float
    eval_episodes: int
    seconds: float = 0.0
    curve_steps: list[int] = field(default_factory=list)
    curve_success: list[float] = field(default_factory=list)
    model_stats: dict[str, int] = field(default_factory=dict)
    """The experience model's counters (the oracle: answers, cache hits, corruptions by kind)."""

    def cells(self) -> tuple[str, ...]:
        """The run's row of the results table (:data:`TABLE_COLUMNS`)."""
        model = self.model if self.error_rate is None else f"{self.model} (error {self.error_rate:g})"
        return (
            self.method,
            model,
            f"{self.real_steps:,}",
            f"{self.synthetic_steps:,}",
            f"{100 * self.success:.1f}",
        )


@dataclass
class Sim2RealReport:
    """All results of one experiment, with where its files went."""

    config: Sim2RealConfig
    runs: list[RunResult]
    seconds: float
    synthetic: SyntheticSettings | None = None
    """The synthetic env's state mode and history length."""
    candidates_seen: int | None = None
    """The most candidate actions seen when K was chosen (``None``: K was given)."""
    table_path: Path | None = None
    plot_path: Path | None = None
    json_path: Path | None = None

    def find(self, method: str, error_rate: float | None = None) -> RunResult:
        for run in self.runs:
            if run.method == method and (error_rate is None or run.error_rate == error_rate):
                return run
        raise KeyError(f"no run {method!r} at error rate {error_rate}")

    def table(self) -> str:
        """The results in the paper's form (method, real transitions, success), as Markdown."""
        rows = [f"| {' | '.join(cells)} |" for cells in [TABLE_COLUMNS, *(run.cells() for run in self.runs)]]
        return "\n".join([rows[0], "|---" * len(TABLE_COLUMNS) + "|", *rows[1:]])


# -- envs --------------------------------------------------------------------------------------
def _reference_env(config: Sim2RealConfig, split: str) -> gym.Env:
    domain = get_domain(config.domain)
    return domain.make_reference_env(split=split, max_steps=domain.max_episode_steps, reward=config.reward)


def make_experience_model(
    kind: str,
    domain: str | Domain,
    *,
    error_rate: float = 0.0,
    reward: RewardKind = "outcome",
    seed: int = 0,
) -> ExperienceModel:
    """The experience model of a run: the oracle at ``error_rate`` (with ``reward``), or an LLM backend.

    ``kind``: ``"oracle"``, ``"endpoint"``, ``"local"``, ``"auto"`` or a model name such as
    ``"local:<directory>"`` (see :class:`Sim2RealConfig`).
    """
    if kind == "oracle":
        from dreamgym_env.envs.oracle import OracleExperienceModel

        return OracleExperienceModel(domain, error_rate=error_rate, seed=seed, env_kwargs={"reward": reward})
    model_kind(kind)
    return experience_model_for(get_domain(domain), kind, seed=seed)


@dataclass(frozen=True)
class SyntheticSettings:
    """How the experiment builds its synthetic env (recorded in ``results.json``)."""

    state_mode: StateMode
    """``"structured"`` where the domain's text states list no admissible actions but its abstract
    states do (the policy chooses among admissible actions), else ``"text"``."""
    history_len: int
    """Past steps in each request: the whole episode (``max_episode_steps``) when the oracle
    answers a domain whose reference env cannot be restored from a state (it replays the
    episode from the task's start), else the env's default."""


def synthetic_settings(config: Sim2RealConfig) -> SyntheticSettings:
    """The synthetic env's state mode and history length for ``config``'s domain and model.

    A trained model (the pack's default ``local``, ``local:adapter``, ``local:distilled``, or
    ``local:<dir>``, and ``auto`` where it serves the pack's default) gets the state mode it was
    trained on.
    """
    domain = get_domain(config.domain)
    tasks = list(domain.tasks("train")[:1])
    listed = bool(tasks) and domain.admissible_actions(tasks[0].initial_state) is not None
    mode: StateMode = "structured" if domain.state_schema is not None and not listed else "text"
    kind, _, name = config.model.partition(":")
    trained = None
    if kind == "auto":
        trained = default_trained_model(pack_models(domain).default)
    elif kind == "local":
        models = pack_models(domain)
        if name in (ADAPTER_SPEC, DISTILLED_DIR):
            trained = models.get("adapter" if name == ADAPTER_SPEC else "distilled")
        else:
            trained = TrainedModel.find(Path(name).expanduser()) if name else models.default
    if trained is not None and trained.state_mode in ("text", "structured"):
        mode = cast(StateMode, trained.state_mode)
    history_len = DEFAULT_HISTORY_LEN
    if config.model == "oracle" and not _restorable(config):
        history_len = max(DEFAULT_HISTORY_LEN, domain.max_episode_steps)
    return SyntheticSettings(mode, history_len)


def _restorable(config: Sim2RealConfig) -> bool:
    env = _reference_env(config, "train")
    try:
        return bool(getattr(env.unwrapped, "restorable", False))
    finally:
        env.close()


def _synthetic_env(config: Sim2RealConfig, model: ExperienceModel) -> DreamEnv:
    domain = get_domain(config.domain)
    settings = synthetic_settings(config)
    return DreamEnv(
        domain,
        model,
        max_steps=domain.max_episode_steps,
        split="train",
        state_mode=settings.state_mode,
        history_len=settings.history_len,
        reward_mode=config.synthetic_reward,
        rubric=config.reward or "outcome",  # the rubric pays what the real env pays
    )


def choose_max_actions(
    domain: str | Domain, *, seed: int = 0, tasks: int = PROBE_TASKS, steps: int = PROBE_STEPS
) -> tuple[int, int]:
    """``(K, most candidates seen)``: K for ``ChoiceActions`` on ``domain``.

    The most candidate actions (admissible actions with their free slots filled, as
    :class:`~dreamgym_env.wrappers.ChoiceActions` lists them) seen at the reset and in
    ``steps`` uniformly random steps of ``tasks`` train tasks spread over the split, in the
    reference env; K is that count rounded up to a multiple of 8, and at least
    :data:`~dreamgym_env.wrappers.choice_actions.DEFAULT_MAX_ACTIONS` (32), so a domain whose
    pages fit in 32 keeps the policy it always had. Seeded: the same domain and seed give the
    same K.
    """
    from dreamgym_env.wrappers.choice_actions import ChoiceActions

    d = get_domain(domain)
    train = list(d.tasks("train"))
    if not train:
        raise ConfigurationError(f"domain {d.name!r} has no train tasks")
    env = ChoiceActions(
        d.make_reference_env(split="train", max_steps=d.max_episode_steps), max_actions=1 << 20
    )
    rng = np.random.default_rng(seed)
    stride = max(1, len(train) // tasks)
    most = 0
    try:
        for i, task in enumerate(train[::stride][:tasks]):
            infos = _random_episode(env, task, rng, seed=seed + i, steps=steps)
            most = max(most, *(len(info["action_candidates"]) for info in infos))
    finally:
        env.close()
    return max(DEFAULT_MAX_ACTIONS, 8 * math.ceil(most / 8)), most


def max_actions_of(config: Sim2RealConfig) -> int:
    """``config.ppo.max_actions``, or K chosen for the domain when it is ``None``."""
    if config.ppo.max_actions is not None:
        return config.ppo.max_actions
    return choose_max_actions(config.domain, seed=config.seed)[0]


def score_paid_at_end(domain: str | Domain, *, episodes: int = SCORE_PROBE_EPISODES) -> bool:
    """Whether the reference env pays its ``"score"`` reward only at an episode's last step.

    Checked on the expert's episodes of the first ``episodes`` train tasks (uniformly random
    admissible actions where the domain has no expert): a nonzero reward at any step before the
    end means a shaped, step-by-step score, which the synthetic env cannot pay (it pays the
    model's reward at the step that ends the episode only). ``False`` for a domain without a
    score.
    """
    d = get_domain(domain)
    if "score" not in d.reward_modes:
        return False
    env = d.make_reference_env(split="train", max_steps=d.max_episode_steps, reward="score")
    rng = np.random.default_rng(0)
    try:
        for i, task in enumerate(list(d.tasks("train"))[:episodes]):
            policy = _expert_or_none(d)  # a fresh expert per episode (experts may plan per episode)
            observation, info = env.reset(seed=i, options={"task": task})
            done = False
            while not done:
                if policy is not None:
                    action = policy(observation, info)
                else:
                    candidates = [
                        concrete
                        for a in info.get("admissible_actions") or []
                        for concrete in (d.fill_slots(a, task, observation) if ACTION_SLOT.search(a) else [a])
                    ] or [""]
                    action = candidates[int(rng.integers(len(candidates)))]
                observation, reward, terminated, truncated, info = env.step(action)
                done = terminated or truncated
                if not done and float(reward) != 0.0:
                    return False
    finally:
        env.close()
    return True


def _expert_or_none(domain: Domain) -> Any:
    try:
        return domain.expert_policy()
    except ConfigurationError:
        return None


def test_tasks(config: Sim2RealConfig) -> list[Task]:
    """The evaluation tasks: the first ``eval_tasks`` of the domain's test split."""
    tasks = list(get_domain(config.domain).tasks("test"))[: config.eval_tasks]
    if not tasks:
        raise ConfigurationError(f"domain {config.domain!r} has no test tasks")
    return tasks


# -- one worker job ----------------------------------------------------------------------------
class _Agent:
    """One PPO agent of a worker job: MaskablePPO with the candidate policy on ``n_envs`` copies of an env.

    ``started``: when the job began (every result's ``seconds`` count from there).
    """

    def __init__(self, config: Sim2RealConfig, make_env: Callable[[], gym.Env], started: float) -> None:
        import torch
        from sb3_contrib import MaskablePPO
        from stable_baselines3.common.vec_env import DummyVecEnv

        from dreamgym_env.replay.embedders import HashedEmbedder
        from dreamgym_env.rl.sb3 import MaskableCandidatePolicy, wrap_for_sb3

        torch.set_num_threads(1)  # one core per worker
        self.config, self.started = config, started
        self.embedder = HashedEmbedder(config.ppo.embed_dim)
        k = max_actions_of(config)
        p = config.ppo
        self.venv = DummyVecEnv([lambda: wrap_for_sb3(make_env(), self.embedder, max_actions=k)] * p.n_envs)
        self.model = MaskablePPO(
            MaskableCandidatePolicy,
            self.venv,
            n_steps=p.n_steps,
            batch_size=p.batch_size,
            n_epochs=p.n_epochs,
            learning_rate=p.learning_rate,
            gamma=p.gamma,
            ent_coef=p.ent_coef,
            seed=config.seed,
            verbose=0,
        )

    def learn(
        self, method: str, label: str, error_rate: float | None, monitor: Any, timesteps: int, name: str
    ) -> RunResult:
        """Train on for ``timesteps`` (or until ``monitor`` stops it), test, save as ``models/<name>``.

        The result counts the real steps ``monitor`` saw, the agent's other steps as synthetic,
        and its learning curve from where this call began.
        """
        from dreamgym_env.rl.sb3 import evaluate_policy_on_tasks, wrap_for_sb3

        config, before = self.config, self.model.num_timesteps
        self.model.learn(timesteps, callback=monitor, reset_num_timesteps=before == 0)
        env = wrap_for_sb3(_reference_env(config, "test"), self.embedder, max_actions=max_actions_of(config))
        test = evaluate_policy_on_tasks(self.model, env, test_tasks(config), seed=config.seed)
        self.model.save(config.out_dir / "models" / name)
        return RunResult(
            method,
            label,
            error_rate,
            monitor.real_steps,
            self.model.num_timesteps - monitor.real_steps,
            test.success,
            test.episodes,
            time.perf_counter() - self.started,
            *_curve(monitor.log, after=before),
        )


def _curve(log: Any, after: int = 0) -> tuple[list[int], list[float]]:
    """The rolling training success at the episodes that ended after step ``after`` (~200 points).

    The window runs over the whole log, so an S2R curve continues from its synthetic part.
    """
    steps, success = log.success_curve(CURVE_WINDOW)
    keep = np.flatnonzero(steps > after)
    stride = max(1, len(keep) // 200)
    return [int(steps[i]) for i in keep[::stride]], [float(success[i]) for i in keep[::stride]]


def train_reference(config: Sim2RealConfig) -> list[RunResult]:
    """PPO on the real env alone for ``real_steps`` real steps."""
    from dreamgym_env.rl.sb3 import TrainingMonitor

    agent = _Agent(config, lambda: _reference_env(config, "train"), time.perf_counter())
    monitor = TrainingMonitor(real_step_budget=config.real_steps)
    timesteps = config.real_steps + config.ppo.n_envs * config.ppo.n_steps
    return [agent.learn("PPO (real env)", "-", None, monitor, timesteps, "reference")]


def train_dreamgym(config: Sim2RealConfig, error_rate: float) -> list[RunResult]:
    """DreamGym-PPO (synthetic steps only), then DreamGym-S2R-PPO (the same agent, then real steps)."""
    from dreamgym_env.rl.sb3 import TrainingMonitor
    from dreamgym_env.wrappers.sim_to_real import SimToReal

    started = time.perf_counter()
    experience_model = make_experience_model(
        config.model,
        config.domain,
        error_rate=error_rate,
        reward=config.reward or "outcome",
        seed=config.seed,
    )
    synthetic_sides: list[DreamEnv] = []
    recorded = [0]  # synthetic steps recorded, over all sub-envs

    def make() -> gym.Env:
        # a learned model's unusable answer on a drifted state ends that episode (truncated), not the run
        synthetic_sides.append(_synthetic_env(config, experience_model))
        synthetic_sides[-1].add_step_listener(lambda *_: recorded.__setitem__(0, recorded[0] + 1))
        return SimToReal(synthetic_sides[-1], _reference_env(config, "train"))

    agent = _Agent(config, make, started)
    label = config.model if config.synthetic_reward == "model" else f"{config.model} (rubric reward)"
    e = error_rate if config.model == "oracle" else None
    tag = f"{config.model}-{error_rate:g}"
    monitor = TrainingMonitor()
    synthetic = agent.learn("DreamGym-PPO", label, e, monitor, config.synthetic_budget, f"dreamgym-{tag}")
    agent.venv.env_method("switch", "real")  # every sub-env moves to the real env at its next reset
    s2r = agent.learn(
        "DreamGym-S2R-PPO",
        label,
        e,
        TrainingMonitor(real_step_budget=config.s2r_budget, log=monitor.log),
        config.s2r_budget * 4 + config.ppo.n_envs * config.ppo.n_steps,
        f"dreamgym-s2r-{tag}",
    )
    failed = sum(side.model_failures for side in synthetic_sides)
    synthetic.model_stats = s2r.model_stats = _model_stats(experience_model, recorded[0] + failed, failed)
    return [synthetic, s2r]


def _model_stats(model: ExperienceModel, asked: int, failed: int) -> dict[str, int]:
    """The oracle's counters, and for every model the synthetic steps asked and those it failed."""
    from dreamgym_env.envs.oracle import OracleExperienceModel

    stats = dict(model.stats) if isinstance(model, OracleExperienceModel) else {}
    stats["synthetic_steps_asked"] = asked
    stats["failed_steps"] = failed
    return stats


def _random_episode(
    env: gym.Env, task: Task, rng: np.random.Generator, *, seed: int, steps: int | None = None
) -> list[dict[str, Any]]:
    """The infos of an episode of uniformly random candidate choices (``ChoiceActions``), from its reset.

    ``steps``: stop after that many steps, if the episode has not ended before.
    """
    _, info = env.reset(seed=seed, options={"task": task})
    infos = [info]
    while steps is None or len(infos) <= steps:
        index = int(rng.integers(max(1, len(info["action_candidates"]))))
        _, _, terminated, truncated, info = env.step(index)
        infos.append(info)
        if terminated or truncated:
            break
    return infos


def random_baseline(config: Sim2RealConfig) -> RunResult:
    """A uniformly random choice among the candidate actions, on the test tasks."""
    from dreamgym_env.wrappers.choice_actions import ChoiceActions

    env = ChoiceActions(_reference_env(config, "test"), max_actions=max_actions_of(config))
    rng = np.random.default_rng(config.seed)
    tasks = test_tasks(config)
    wins = sum(
        bool(_random_episode(env, task, rng, seed=config.seed + i)[-1].get("won", False))
        for i, task in enumerate(tasks)
    )
    return RunResult("Random policy", "-", None, 0, 0, wins / len(tasks), len(tasks))


# -- the experiment ----------------------------------------------------------------------------
def run_sim2real(config: Sim2RealConfig, *, log: Callable[[str], None] = print) -> Sim2RealReport:
    """Train and evaluate every agent, write ``results.json``, ``table.md`` and ``learning_curves.png``."""
    started = time.perf_counter()
    (config.out_dir / "models").mkdir(parents=True, exist_ok=True)
    seen = None
    if config.ppo.max_actions is None:
        k, seen = choose_max_actions(config.domain, seed=config.seed)
        config = with_overrides(config, max_actions=k)
    synthetic = synthetic_settings(config)
    log(
        f"sim2real on {get_domain(config.domain).name}: K={config.ppo.max_actions} candidate actions"
        + (f" (most seen {seen})" if seen is not None else "")
        + f", reward {config.reward!r}, synthetic env state_mode={synthetic.state_mode!r} "
        f"history_len={synthetic.history_len}"
    )
    jobs: list[tuple[Callable[..., list[RunResult]], tuple[Any, ...]]] = [(train_reference, (config,))]
    jobs += [(train_dreamgym, (config, e)) for e in config.error_rates]
    log(
        f"sim2real: {len(jobs)} training jobs on {config.workers} worker(s); real steps {config.real_steps:,}, "
        f"synthetic steps {config.synthetic_budget:,}, S2R real steps {config.s2r_budget:,}"
    )
    runs: list[RunResult] = [random_baseline(config)]
    if config.workers == 1:
        for fn, args in jobs:
            runs += fn(*args)
            log(f"  done: {runs[-1].method} ({runs[-1].seconds:.0f} s)")
    else:
        # fork: workers inherit the imported package (no torch threads run in this process yet)
        method = "fork" if "fork" in get_all_start_methods() else "spawn"
        with ProcessPoolExecutor(max_workers=config.workers, mp_context=get_context(method)) as pool:
            futures = [pool.submit(fn, *args) for fn, args in jobs]
            for future in futures:
                done = future.result()
                runs += done
                log(f"  done: {', '.join(r.method for r in done)} ({done[-1].seconds:.0f} s)")
    order = {"PPO (real env)": 0, "DreamGym-PPO": 1, "DreamGym-S2R-PPO": 2, "Random policy": 3}
    runs.sort(key=lambda r: (order.get(r.method, 9), r.error_rate or 0.0))
    report = Sim2RealReport(config, runs, time.perf_counter() - started, synthetic, seen)
    write_outputs(report)
    return report


def write_outputs(report: Sim2RealReport) -> None:
    """Write the table, the JSON results and the plot next to each other in ``out_dir``."""
    out = report.config.out_dir
    report.table_path = out / "table.md"
    report.table_path.write_text(report.table() + "\n", encoding="utf-8")
    report.json_path = out / "results.json"
    config = asdict(report.config)
    config["domain"] = get_domain(report.config.domain).name  # a Domain instance is no JSON
    config["out_dir"] = str(report.config.out_dir)
    report.json_path.write_text(
        json.dumps(
            {
                "config": config,
                "synthetic_env": asdict(report.synthetic) if report.synthetic is not None else None,
                "candidates_seen": report.candidates_seen,
                "seconds": report.seconds,
                "runs": [asdict(r) for r in report.runs],
            },
            indent=1,
        ),
        encoding="utf-8",
    )
    report.plot_path = plot(report, out / "learning_curves.png")


def plot(report: Sim2RealReport, path: Path) -> Path:
    """Learning curves (training success vs steps) and test success vs the model's error rate."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    for run in report.runs:
        if not run.curve_steps:
            continue
        label = run.method if run.error_rate is None else f"{run.method}, error {run.error_rate:g}"
        if run.method == "PPO (real env)":  # drawn last-but-visible: black, dotted, on top
            left.plot(
                run.curve_steps, run.curve_success, ":", color="k", label=label, linewidth=2.0, zorder=5
            )
        else:
            style = "--" if run.method == "DreamGym-S2R-PPO" else "-"
            left.plot(run.curve_steps, run.curve_success, style, label=label, linewidth=1.2)
    left.set(
        xlabel="environment steps (synthetic, then real for S2R)",
        ylabel=f"success in the training env (last {CURVE_WINDOW} episodes)",
        title="Learning curves",
        ylim=(0, 1),
    )
    left.legend(fontsize=7)
    if any(run.error_rate is not None for run in report.runs):
        _success_by_error_rate(right, report.runs)
    else:
        _success_by_method(right, report.runs, report.config.eval_tasks)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _success_by_error_rate(axes: Any, runs: list[RunResult]) -> None:
    """The oracle's runs: test success against the error rate, the baselines as lines."""
    for method, style, more in (("DreamGym-PPO", "o-", ""), ("DreamGym-S2R-PPO", "s--", "+")):
        points = [r for r in runs if r.method == method and r.error_rate is not None]
        if points:  # DreamGym-PPO's real steps are 0, S2R's come after its synthetic ones
            axes.plot(
                [r.error_rate for r in points],
                [100 * r.success for r in points],
                style,
                label=f"{method} ({more}{points[0].real_steps:,} real steps)",
            )
    for run in runs:
        if run.method in ("PPO (real env)", "Random policy"):
            axes.axhline(
                100 * run.success,
                linestyle=":",
                color="grey" if run.method == "Random policy" else "k",
                label=f"{run.method} ({run.real_steps:,} real steps)",
            )
    axes.set(
        xlabel="experience-model error rate",
        ylabel="test success (%)",
        title="Success vs model fidelity",
        ylim=(0, 100),
    )
    axes.legend(fontsize=7)


def _success_by_method(axes: Any, runs: list[RunResult], tasks: int) -> None:
    """A learned model's runs (no error rate): one bar of test success a method."""
    labels = [f"{run.method}\n{run.real_steps:,} real steps" for run in runs]
    bars = axes.bar(range(len(runs)), [100 * run.success for run in runs], color="tab:blue")
    axes.bar_label(bars, fmt="%.1f", fontsize=8)
    axes.set_xticks(range(len(runs)), labels, fontsize=7)
    axes.set(ylabel="test success (%)", title=f"Test success ({tasks} reference test tasks)", ylim=(0, 100))


def parse_error_rates(text: str) -> tuple[float, ...]:
    """``"0,0.05,0.1"`` -> ``(0.0, 0.05, 0.1)``."""
    try:
        rates = tuple(float(part) for part in text.split(",") if part.strip())
    except ValueError as exc:
        raise ConfigurationError(f"--error-rates must be comma-separated numbers, got {text!r}") from exc
    if any(not math.isfinite(r) for r in rates):
        raise ConfigurationError(f"--error-rates must be finite, got {text!r}")
    return rates


def with_overrides(config: Sim2RealConfig, **ppo: Any) -> Sim2RealConfig:
    """A copy of ``config`` with some PPO settings replaced."""
    return replace(config, ppo=replace(config.ppo, **ppo))


__all__: Sequence[str] = (
    "PPOSettings",
    "RunResult",
    "Sim2RealConfig",
    "Sim2RealReport",
    "SyntheticSettings",
    "choose_max_actions",
    "make_experience_model",
    "parse_error_rates",
    "run_sim2real",
    "score_paid_at_end",
    "synthetic_settings",
)
