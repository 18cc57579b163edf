"""``dreamgym bench``: agents on env ids, success with confidence intervals, the sim-to-real gap.

The command-line face of :mod:`dreamgym_env.bench.episodes` and :mod:`dreamgym_env.bench.report`.
Wire it with ``app.command("bench")(bench_command)``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dreamgym_env.cli.options import SplitOption
from dreamgym_env.errors import ConfigurationError


def bench_command(
    agent: Annotated[
        list[str],
        typer.Option(help="Agent: random, expert or llm[:model] (repeat for several)."),
    ],
    env: Annotated[
        list[str],
        typer.Option(
            help="Env id, e.g. DreamGym/WebShop-v0 or DreamGym/WebShop-Ref-v0 (repeat for several)."
        ),
    ],
    episodes: Annotated[int, typer.Option(min=1, help="Episodes per agent and env id.")] = 100,
    seed: Annotated[int, typer.Option(help="Seed of the task order and the episodes.")] = 0,
    num_envs: Annotated[
        int, typer.Option(min=1, help="Episodes run at once (the agent's and the model's batch).")
    ] = 4,
    split: SplitOption = "test",
    max_steps: Annotated[
        int | None,
        typer.Option(
            min=1, help="Cap each episode at N steps, below the id's own limit (cut episodes are not won)."
        ),
    ] = None,
    model: Annotated[
        str,
        typer.Option(
            help="Experience model of synthetic ids: 'auto' (the env's default choice), 'endpoint', "
            "'local', or 'oracle' (the reference env, an analysis tool; see --error-rate)."
        ),
    ] = "auto",
    error_rate: Annotated[float, typer.Option(help="Error rate of the oracle experience model.")] = 0.0,
    agent_base_url: Annotated[
        str | None,
        typer.Option(help="Endpoint of llm agents (default: DREAMGYM_BASE_URL; key from DREAMGYM_API_KEY)."),
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="Write bench.md, bench.json and bench.png (success plot) here.")
    ] = None,
    plot: Annotated[bool, typer.Option(help="Draw bench.png in --out (needs matplotlib).")] = True,
    progress: Annotated[bool, typer.Option(help="Show a progress bar on stderr.")] = True,
) -> None:
    """Run agents on env ids: success (95% Wilson interval), reward, steps, invalid actions, tokens, time.

    The same agent on a synthetic id and its reference id (same seed, same tasks) shows the
    sim-to-real gap of its score, in a second table. An episode whose experience model fails
    (bad output, transport errors after the retries) is counted as errored, and the run goes on.
    """
    from dreamgym_env.agents.llm import AgentChat
    from dreamgym_env.agents.make import make_agent, make_chat_client, split_agent_spec
    from dreamgym_env.bench.episodes import BenchResult, env_spec, is_synthetic, run_bench
    from dreamgym_env.bench.report import markdown_report, write_report
    from dreamgym_env.envs.models import model_kind
    from dreamgym_env.envs.registry import get_domain
    from dreamgym_env.rl.sim2real import make_experience_model

    if split not in ("test", "train"):
        raise ConfigurationError(f"--split must be 'test' or 'train', got {split!r}")
    model_kind(model)
    if model != "oracle" and error_rate:
        raise ConfigurationError("--error-rate applies to --model oracle only")
    specs = [split_agent_spec(a) for a in agent]  # names are checked before anything loads
    domains = {env_id: str(env_spec(env_id).kwargs.get("domain", "")) for env_id in env}
    for domain in domains.values():
        get_domain(domain)  # an id of no DreamGym domain fails here
    chats: dict[str, AgentChat] = {}
    results: list[BenchResult] = []
    try:
        for name, (kind, llm_model) in zip(agent, specs, strict=True):
            if kind == "llm" and name not in chats:
                chats[name] = make_chat_client(llm_model, base_url=agent_base_url)
        for env_id in env:
            experience = (
                make_experience_model(model, domains[env_id], error_rate=error_rate, seed=seed)
                if is_synthetic(env_id)
                else None
            )
            try:
                for name in agent:
                    actor = make_agent(name, domains[env_id], chat=chats.get(name))
                    results.append(
                        run_bench(
                            actor,
                            env_id,
                            episodes,
                            seed=seed,
                            num_envs=num_envs,
                            split=split,
                            experience_model=experience,
                            progress=progress,
                            max_steps=max_steps,
                        )
                    )
            finally:
                if experience is not None:
                    experience.close()
    finally:
        for chat in chats.values():
            chat.close()
    typer.echo(markdown_report(results), nl=False)
    if out is not None:
        paths = write_report(results, out, plot=plot)
        typer.echo("\n" + "\n".join(f"{kind}: {path}" for kind, path in paths.items()))
