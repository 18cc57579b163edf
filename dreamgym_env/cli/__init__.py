"""The ``dreamgym`` command.

Every command reports a :class:`~dreamgym_env.errors.DreamGymError` (an unknown domain or policy,
a failing model, a damaged file) as one line on stderr and exit code 2 (:mod:`.errors`); Ctrl-C
prints ``interrupted`` and exits with 130.
"""

from __future__ import annotations

import signal
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import gymnasium as gym
import typer
from rich.console import Console
from rich.markup import escape

import dreamgym_env  # noqa: F401  (registers the ids)
from dreamgym_env.agents import make_policy
from dreamgym_env.agents.rollouts import stop_reason
from dreamgym_env.cli.bench import bench_command
from dreamgym_env.cli.buffer import buffer_app
from dreamgym_env.cli.errors import INTERRUPTED_EXIT_CODE, DreamGymTyper, interrupt, leave_interrupted
from dreamgym_env.cli.experience import experience_app
from dreamgym_env.cli.fidelity import fidelity_command
from dreamgym_env.cli.options import (
    DomainOption,
    PolicyOption,
    PolicySeedOption,
    SplitOption,
    StateModeOption,
    domain_or_default,
    print_plain,
)
from dreamgym_env.cli.serve import serve_command
from dreamgym_env.cli.sim2real import sim2real_command
from dreamgym_env.cli.tasks import tasks_app
from dreamgym_env.envs.registry import reference_id, synthetic_id

if TYPE_CHECKING:
    from dreamgym_env.envs.synthetic import StateMode

app = DreamGymTyper(
    help="DreamGym: synthetic agent experience from an LLM experience model.", no_args_is_help=True
)
app.add_typer(tasks_app, name="tasks")
app.add_typer(buffer_app, name="buffer")
app.add_typer(experience_app, name="experience")
app.command("fidelity")(fidelity_command)
app.command("bench")(bench_command)
experiment_app = DreamGymTyper(help="Experiments that train agents and report results.", no_args_is_help=True)
experiment_app.command("sim2real")(sim2real_command)
app.add_typer(experiment_app, name="experiment")
app.command("serve")(serve_command)
console = Console()


@app.command("envs")
def list_envs() -> None:
    """List the registered DreamGym env ids."""
    for env_id in sorted(i for i in gym.registry if i.startswith("DreamGym/")):
        spec = gym.spec(env_id)
        console.print(f"{env_id}  (max_episode_steps={spec.max_episode_steps})")


@app.command()
def demo(
    model: Annotated[
        str | None,
        typer.Option(
            help="Default: the pack's trained model. local:base (the prompted base), a preset "
            "(qwen-0.5b, qwen-1.5b), a .gguf file, oracle[:error rate] or an endpoint model name."
        ),
    ] = None,
    episodes: Annotated[int, typer.Option(min=1, help="Synthetic episodes to play.")] = 2,
    domain: DomainOption = None,
    max_steps: Annotated[int, typer.Option(min=1, help="Steps per episode at most.")] = 5,
    seed: Annotated[int, typer.Option(help="Seed of the tasks.")] = 0,
    replay: Annotated[
        bool | None,
        typer.Option(
            help="Ground the model in a replay buffer of expert episodes (default: on, except for a "
            "pack's trained model, trained without demonstrations)."
        ),
    ] = None,
    state_mode: StateModeOption = None,
    full: Annotated[bool, typer.Option(help="Show whole states, not their first lines.")] = False,
) -> None:
    """Synthetic episodes beside the reference env, step by step, then a fidelity summary."""
    from dreamgym_env.demo import run_demo

    pack = domain_or_default(domain)  # a typo fails here, before any loading
    run_demo(
        model=model,
        episodes=episodes,
        domain=pack.name,
        max_steps=max_steps,
        seed=seed,
        replay=replay,
        console=console,
        state_mode=cast("StateMode | None", state_mode),
        full=full,
    )


@app.command()
def episode(
    domain: DomainOption = None,
    policy: PolicyOption = "expert",
    reference: Annotated[
        bool, typer.Option(help="Run the reference env instead of the synthetic one.")
    ] = False,
    seed: PolicySeedOption = 0,
    state_mode: StateModeOption = None,
) -> None:
    """Run one episode and print each step: action, reasoning, next state, reward.

    On the synthetic env, an episode that cannot usefully go on (the page offers no action, or
    the scripted policy repeats an action the env just rejected) stops early, saying why.
    """
    pack = domain_or_default(domain)
    act = make_policy(policy, pack, seed=seed)  # names are checked before the env (and model) load
    env_id = reference_id(pack) if reference else synthetic_id(pack)
    with console.status(f"making {env_id} (a synthetic env chooses and loads its experience model) ..."):
        make_kwargs: dict[str, Any] = {"state_mode": state_mode} if state_mode and not reference else {}
        env = gym.make(env_id, **make_kwargs)
        obs, info = env.reset(seed=seed)
    console.rule(f"{env_id} · task {info['task_id']}")
    console.print(obs, markup=False, highlight=False)
    done, total, last_action = False, 0.0, None
    while not done:
        action = act(obs, info)
        stop = None if reference else stop_reason(info, action, last_action)
        if stop is not None:
            console.rule(escape(f"stopped: {stop}"), style="yellow")
            break
        last_action = action
        with console.status(
            "" if reference else "the experience model is answering (20-50 s a step on a 2-core CPU) ..."
        ):
            obs, reward, terminated, truncated, info = env.step(action)
        total += float(reward)
        console.rule(escape(f"action: {action}"), style="cyan")
        if info.get("reasoning"):
            console.print(f"reasoning: {info['reasoning']}", markup=False, highlight=False, style="dim")
        console.print(obs, markup=False, highlight=False)
        if info.get("error"):  # an invalid action's, or the model failure that truncated the episode
            console.print(f"error: {info['error']}", markup=False, highlight=False, style="red")
        console.print(f"reward {reward:g}  terminated={terminated}  truncated={truncated}")
        done = terminated or truncated
    console.rule(f"return {total:g}, won={info.get('won', False)}")
    env.close()


@app.command()
def collect(
    out: Annotated[Path, typer.Option(help="Output JSONL file (one trajectory a line).")],
    domain: DomainOption = None,
    policy: PolicyOption = "expert",
    episodes: Annotated[int, typer.Option(min=1, help="Number of episodes.")] = 100,
    seed: PolicySeedOption = 0,
    split: SplitOption = "train",
    epsilon: Annotated[float, typer.Option(help="Random-action share of the noisy policy.")] = 0.3,
    state_mode: Annotated[
        str,
        typer.Option(
            help="'text': the observations the agent saw; 'structured': the domain's abstract states "
            "(what a structured experience model reads and writes)."
        ),
    ] = "text",
    env: Annotated[
        str | None,
        typer.Option(
            help="A Gymnasium id to record instead of the domain's reference env, e.g. "
            "DreamGym/WebShop-Real-v0 (a real server's); its domain is the id's."
        ),
    ] = None,
) -> None:
    """Collect offline trajectories in the reference env, or any env of a domain (docs/data-format.md)."""
    import gymnasium as gym

    from dreamgym_env.agents.rollouts import collect as collect_trajectories

    if env is not None:  # every DreamGym id names its domain
        domain = gym.spec(env).kwargs.get("domain") or domain
    if state_mode not in ("text", "structured"):
        raise typer.BadParameter(
            f"must be 'text' or 'structured', got {state_mode!r}", param_hint="--state-mode"
        )
    summary = collect_trajectories(
        domain_or_default(domain),
        policy,
        episodes,
        out,
        seed=seed,
        split=split,
        epsilon=epsilon,
        state_mode="structured" if state_mode == "structured" else "text",
        env=gym.make(env) if env is not None else None,
    )
    print_plain(console, summary.format())


def main() -> None:
    """Entry point of the console script.

    Ctrl-C ends the command (its cleanup gets half a second at most), prints ``interrupted`` and
    ends the process with status 130, also during the shutdown after a finished command
    (:func:`~dreamgym_env.cli.errors.interrupt`).
    """
    signal.signal(signal.SIGINT, interrupt)
    try:
        app()
    except SystemExit as done:  # Typer's standalone mode always ends in sys.exit
        if done.code == INTERRUPTED_EXIT_CODE:
            leave_interrupted()
        raise
    finally:
        signal.signal(signal.SIGINT, leave_interrupted)
