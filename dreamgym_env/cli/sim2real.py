"""``dreamgym experiment sim2real``: the command-line face of :mod:`dreamgym_env.rl.sim2real`.

Kept free of heavy imports (torch, SB3 load when the command runs), so that the CLI starts fast.
Wire it with ``experiment_app.command("sim2real")(sim2real_command)``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, cast

import typer

from dreamgym_env.cli.errors import exit_on_error
from dreamgym_env.cli.options import DomainOption, domain_or_default
from dreamgym_env.errors import ConfigurationError


@exit_on_error  # on a plain Typer too; a DreamGymTyper wraps its commands itself
def sim2real_command(
    domain: DomainOption = None,
    algo: Annotated[str, typer.Option(help="RL algorithm: 'ppo' (sb3-contrib MaskablePPO).")] = "ppo",
    real_steps: Annotated[
        int, typer.Option(help="Real-env steps of the PPO (real env) baseline: N.")
    ] = 30_000,
    synthetic_steps: Annotated[
        int | None, typer.Option(help="Synthetic steps of DreamGym-PPO (default: N).")
    ] = None,
    s2r_real_steps: Annotated[
        int | None,
        typer.Option(help="Real steps of DreamGym-S2R-PPO after the synthetic ones (default: N/10)."),
    ] = None,
    model: Annotated[
        str,
        typer.Option(
            help="Experience model: 'oracle' (with --error-rates), 'endpoint', 'local', 'auto', or a name "
            "such as 'local:<trained or distilled directory>'."
        ),
    ] = "oracle",
    error_rates: Annotated[
        str, typer.Option(help="Comma-separated error rates of the oracle, e.g. 0,0.05,0.1,0.2,0.4.")
    ] = "0",
    reward: Annotated[
        str | None,
        typer.Option(
            help="'score' (the domain's shaped score) or 'outcome' (1 when the task is completed); "
            "default: the score where the domain's reference env has one."
        ),
    ] = None,
    synthetic_reward: Annotated[
        str,
        typer.Option(
            help="Reward of the synthetic env: 'model' (the experience model's) or 'rubric' (the domain's "
            "reward of the model's predicted state, of the real env's kind, --reward; structured states)."
        ),
    ] = "model",
    eval_tasks: Annotated[int, typer.Option(help="Test-split tasks every agent is evaluated on.")] = 500,
    max_actions: Annotated[
        int | None,
        typer.Option(
            help="K, the candidate actions the policy chooses from (default: at least 32, enough for "
            "the largest page seen in a sample of train tasks)."
        ),
    ] = None,
    workers: Annotated[int, typer.Option(help="Training runs in parallel (one per core).")] = 2,
    seed: Annotated[int, typer.Option(help="Seed of every run.")] = 0,
    out_dir: Annotated[
        Path, typer.Option(help="Where the table, results.json, the plot and models go.")
    ] = Path("runs/sim2real"),
) -> None:
    """Sim-to-real: PPO on the real env vs DreamGym-PPO (synthetic only) vs DreamGym-S2R-PPO."""
    from rich.console import Console
    from rich.table import Table

    from dreamgym_env.envs.synthetic import RewardSource
    from dreamgym_env.rl.sim2real import (
        TABLE_COLUMNS,
        RewardKind,
        Sim2RealConfig,
        parse_error_rates,
        run_sim2real,
        with_overrides,
    )

    console = Console()
    config = Sim2RealConfig(
        domain=domain_or_default(domain).name,
        algo=algo,
        real_steps=real_steps,
        synthetic_steps=synthetic_steps,
        s2r_real_steps=s2r_real_steps,
        model=model,
        error_rates=parse_error_rates(error_rates),
        reward=cast("RewardKind", reward),  # checked by Sim2RealConfig
        synthetic_reward=cast("RewardSource", synthetic_reward),
        eval_tasks=eval_tasks,
        workers=workers,
        seed=seed,
        out_dir=out_dir,
    )
    if max_actions is not None:
        if max_actions < 1:
            raise ConfigurationError(f"--max-actions must be >= 1, got {max_actions}")
        config = with_overrides(config, max_actions=max_actions)
    report = run_sim2real(config, log=lambda line: console.print(line, markup=False, highlight=False))
    table = Table(title=f"Sim-to-real on {config.domain} ({report.seconds / 60:.1f} min)")
    for column in TABLE_COLUMNS:
        table.add_column(column, justify="right" if "steps" in column or "%" in column else "left")
    for run in report.runs:
        table.add_row(*run.cells())
    console.print(table)
    console.print(f"table: {report.table_path}\nresults: {report.json_path}\nplot: {report.plot_path}")
