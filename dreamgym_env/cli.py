"""The ``dreamgym`` command."""

from __future__ import annotations

from typing import Annotated

import gymnasium as gym
import typer
from rich.console import Console

import dreamgym_env  # noqa: F401  (registers the ids)
from dreamgym_env.curriculum.cli import tasks_app

app = typer.Typer(
    help="DreamGym: synthetic agent experience from an LLM experience model.", no_args_is_help=True
)
console = Console()


@app.command("envs")
def list_envs() -> None:
    """List the registered DreamGym env ids."""
    for env_id in sorted(i for i in gym.registry if i.startswith("DreamGym/")):
        spec = gym.spec(env_id)
        console.print(f"{env_id}  (max_episode_steps={spec.max_episode_steps})")


@app.command()
def episode(
    env_id: Annotated[str, typer.Option("--env", help="Gymnasium id to run.")] = "DreamGym/WebShop-v0",
    policy: Annotated[str, typer.Option(help="Policy: 'expert', 'random' or 'scripted'.")] = "scripted",
    seed: Annotated[int, typer.Option(help="Seed of the task draw and the policy.")] = 0,
) -> None:
    """Run one episode and print each step: action, reasoning, next state, reward."""
    from dreamgym_env.agents import make_policy

    env = gym.make(env_id)
    act = make_policy(policy, env, seed=seed)
    obs, info = env.reset(seed=seed)
    console.rule(f"{env_id} · task {info['task_id']}")
    console.print(obs, markup=False)
    done, total = False, 0.0
    while not done:
        action = act(obs, info)
        obs, reward, terminated, truncated, info = env.step(action)
        total += float(reward)
        console.rule(f"action: {action}", style="cyan")
        if info.get("reasoning"):
            console.print(f"[dim]reasoning:[/dim] {info['reasoning']}", highlight=False)
        console.print(obs, markup=False)
        console.print(f"reward {reward:g}  terminated={terminated}  truncated={truncated}")
        done = terminated or truncated
    console.rule(f"return {total:g}, won={info.get('won', False)}")
    env.close()


def main() -> None:
    """Entry point of the console script."""
    app()
