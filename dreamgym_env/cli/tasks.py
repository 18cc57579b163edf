"""``dreamgym tasks generate`` and ``dreamgym tasks stats``: the curriculum on the command line."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path
from typing import Annotated

import numpy as np
import typer
from rich.console import Console
from rich.table import Table

from dreamgym_env.cli.errors import DreamGymTyper
from dreamgym_env.cli.options import DomainOption, domain_or_default
from dreamgym_env.curriculum.chat import ChatModel, EndpointChat
from dreamgym_env.curriculum.curriculum import DEFAULT_NUM_SEEDS, Curriculum
from dreamgym_env.curriculum.generator import (
    DEFAULT_CONCURRENCY,
    DEFAULT_PER_CALL,
    GenerationReport,
    TaskGenerator,
)
from dreamgym_env.curriculum.stats import TaskStats
from dreamgym_env.domain import Domain
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.errors import ConfigurationError, DataError
from dreamgym_env.experience.config import UNSET, EndpointConfig
from dreamgym_env.types import Task

tasks_app = DreamGymTyper(
    help="Curriculum tasks: generate variations with the LLM, show statistics.", no_args_is_help=True
)
console = Console()


def seed_pool(
    domain: str | Domain, *, stats: str | Path | None = None, split: str = "train", seed: int = 0
) -> list[Task]:
    """Seed tasks, best first: by reward variance from a statistics file, else the split shuffled."""
    tasks = list(get_domain(domain).tasks(split))  # type: ignore[arg-type]
    if stats is not None:
        if not Path(stats).exists():
            raise DataError(f"no curriculum statistics at {stats}")
        curriculum = Curriculum(tasks, stats=stats, seed=seed)
        try:
            ranked = curriculum.seeds(len(curriculum))
        finally:
            curriculum.close()
        if ranked:
            return ranked
    order = np.random.default_rng(seed).permutation(len(tasks))
    return [tasks[int(i)] for i in order]


def generate_tasks(
    domain: str | Domain,
    n: int,
    out: str | Path,
    *,
    chat: ChatModel,
    stats: str | Path | None = None,
    split: str = "train",
    num_seeds: int = DEFAULT_NUM_SEEDS,
    per_call: int = DEFAULT_PER_CALL,
    concurrency: int = DEFAULT_CONCURRENCY,
    seed: int = 0,
) -> GenerationReport:
    """Write ``n`` validated variations of seed tasks to ``out`` (JSONL, one Task per line).

    Seeds come ``num_seeds`` at a time from :func:`seed_pool` (highest reward variance first
    when ``stats`` names a curriculum statistics file). Lines are written as tasks are accepted.
    Stops when ``n`` are accepted or after three times the calls that ``n`` needs.
    """
    if n < 1:
        raise ConfigurationError(f"n must be >= 1, got {n}")
    pack = get_domain(domain)
    pool = seed_pool(pack, stats=stats, split=split, seed=seed)
    generator = TaskGenerator(chat, pack, per_call=per_call, concurrency=concurrency)
    budget = 3 * -(-n // per_call)
    total = GenerationReport()
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    start = 0
    with path.open("w", encoding="utf-8") as sink:
        while len(total.accepted) < n and total.calls < budget:
            seeds = [pool[(start + i) % len(pool)] for i in range(min(num_seeds, len(pool)))]
            start += len(seeds)
            generator.max_calls = min(concurrency, budget - total.calls)
            wanted = min(n - len(total.accepted), per_call * generator.max_calls)
            report = generator.generate_sync(seeds, wanted)
            total.merge(report)
            for task in report.accepted:
                sink.write(task.model_dump_json() + "\n")
            sink.flush()
    if len(total.accepted) < n:
        total.note = f"{len(total.accepted)} of {n} accepted after {total.calls} calls"
    return total


def stats_table(path: str | Path, *, top: int = 20) -> Table:
    """A table of the ``top`` tasks of a statistics file, highest reward variance first."""
    if not Path(path).exists():
        raise DataError(f"no curriculum statistics at {path}")
    with TaskStats(path) as stats:
        records = sorted(stats, key=lambda r: (-r.variance, -r.episodes, r.task_id))
        generated = {t.id: t for t in stats.generated}
        table = Table(
            title=f"{path}: {len(stats)} tasks tried, {stats.step} episodes, {len(generated)} generated tasks"
        )
        for column in ("task", "parent", "episodes", "mean return", "success", "V (recent)", "last step"):
            table.add_column(column, justify="left" if column in ("task", "parent") else "right")
        for record in records[:top]:
            parent = generated[record.task_id].parent_id if record.task_id in generated else ""
            table.add_row(
                record.task_id,
                parent or "",
                str(record.episodes),
                f"{record.mean_reward:.3f}",
                f"{record.success_rate:.0%}",
                f"{record.variance:.3f}",
                str(record.last_step),
            )
    return table


@tasks_app.command("generate")
def generate_command(
    out: Annotated[Path, typer.Option(help="Output JSONL file, one task per line.")],
    domain: DomainOption = None,
    n: Annotated[int, typer.Option("--n", help="How many tasks to write.")] = 100,
    stats: Annotated[
        Path | None, typer.Option(help="Curriculum statistics (SQLite): seed the highest-variance tasks.")
    ] = None,
    split: Annotated[str, typer.Option(help="Split the seed tasks come from.")] = "train",
    num_seeds: Annotated[int, typer.Option(help="Seed tasks shown per call.")] = DEFAULT_NUM_SEEDS,
    per_call: Annotated[int, typer.Option(help="Tasks asked for per call.")] = DEFAULT_PER_CALL,
    concurrency: Annotated[int, typer.Option(help="Calls in flight at once.")] = DEFAULT_CONCURRENCY,
    seed: Annotated[int, typer.Option(help="Seed of the seed-task order.")] = 0,
    base_url: Annotated[
        str | None, typer.Option(help="OpenAI-compatible endpoint (else DREAMGYM_BASE_URL).")
    ] = None,
    model: Annotated[str | None, typer.Option(help="Model name (else DREAMGYM_MODEL).")] = None,
    temperature: Annotated[float, typer.Option(help="Sampling temperature.")] = 0.8,
) -> None:
    """Ask the LLM for variations of seed tasks; write the valid, new, feasible ones."""
    config = EndpointConfig.resolve(
        base_url=base_url if base_url is not None else UNSET, model=model if model is not None else UNSET
    )
    with closing(EndpointChat(config, temperature=temperature)) as chat:
        report = generate_tasks(
            domain_or_default(domain),
            n,
            out,
            chat=chat,
            stats=stats,
            split=split,
            num_seeds=num_seeds,
            per_call=per_call,
            concurrency=concurrency,
            seed=seed,
        )
    counts = report.counts()
    console.print(
        f"wrote {counts['accepted']} tasks to {out} ({report.calls} calls, "
        f"{report.prompt_tokens} prompt + {report.completion_tokens} completion tokens); rejected: "
        f"{counts['malformed']} malformed, {counts['duplicate']} duplicate, {counts['infeasible']} infeasible"
    )
    if report.note:
        console.print(f"[yellow]{report.note}[/yellow]")
        raise typer.Exit(1)


@tasks_app.command("stats")
def stats_command(
    path: Annotated[Path, typer.Argument(help="Curriculum statistics file (SQLite).")],
    top: Annotated[int, typer.Option(help="How many tasks to list.")] = 20,
) -> None:
    """Show the tasks of a curriculum statistics file, highest reward variance first."""
    console.print(stats_table(path, top=top))
