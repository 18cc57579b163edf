"""``dreamgym buffer build``, ``stats`` and ``convert``: the replay buffer and its offline data from the command line.

``convert`` turns another project's trajectory files into the offline JSONL format the buffer
and ``dreamgym fidelity --trajectories`` read, and back (AgentGym's,
:mod:`dreamgym_env.replay.agentgym`). The functions work without the CLI; :data:`buffer_app` is
the Typer group the ``dreamgym`` command mounts with ``app.add_typer(buffer_app, name="buffer")``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Annotated

import typer

from dreamgym_env.cli.errors import DreamGymTyper
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.errors import ConfigurationError, DataError
from dreamgym_env.replay.agentgym import from_agentgym, read_agentgym, to_agentgym, write_agentgym
from dreamgym_env.replay.buffer import ExperienceReplayBuffer
from dreamgym_env.replay.jsonl import read_trajectories, write_trajectories
from dreamgym_env.replay.records import BufferStats
from dreamgym_env.types import Source

FORMATS = ("agentgym",)
"""The trajectory formats ``dreamgym buffer convert`` reads and writes beside the offline JSONL."""


def build_buffer(
    source_file: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    embedder: str | None = None,
    capacity: int | None = None,
    source: Source | None = "offline",
) -> BufferStats:
    """Load an offline JSONL file into the buffer file ``out`` (created or extended); return its stats."""
    with ExperienceReplayBuffer(out, embedder=embedder, capacity=capacity) as buffer:
        buffer.load_jsonl(source_file, source=source)
        return buffer.stats()


def buffer_stats(path: str | os.PathLike[str]) -> BufferStats:
    """The statistics of a buffer file, opened read-only (safe while another process writes it)."""
    with ExperienceReplayBuffer(path, read_only=True) as buffer:
        return buffer.stats()


buffer_app = DreamGymTyper(help="Build and inspect experience replay buffers.", no_args_is_help=True)


@buffer_app.command("build")
def build_command(
    source_file: Annotated[
        Path, typer.Option("--from", help="Offline trajectories (JSONL, `dreamgym collect` output).")
    ],
    out: Annotated[
        str,
        typer.Option(
            "--out", help="The buffer: a SQLite file or a postgresql:// URL; extended when it exists."
        ),
    ],
    embedder: Annotated[
        str | None,
        typer.Option(
            help="'hashed', 'minilm' or 'auto' (default: the buffer's own, else DREAMGYM_EMBEDDER, else auto)."
        ),
    ] = None,
    capacity: Annotated[
        int | None, typer.Option(help="Most transitions kept (synthetic evicted first).")
    ] = None,
    keep_source: Annotated[
        bool,
        typer.Option(
            "--keep-source", help="Tag transitions with each trajectory's own source, not 'offline'."
        ),
    ] = False,
) -> None:
    """Load offline trajectories into a replay buffer file."""
    start = time.perf_counter()
    try:
        stats = build_buffer(
            source_file, out, embedder=embedder, capacity=capacity, source=None if keep_source else "offline"
        )
    except DataError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from exc
    typer.echo(stats.format())
    typer.echo(f"built in {time.perf_counter() - start:.1f} s")


@buffer_app.command("stats")
def stats_command(
    buffer: Annotated[str, typer.Argument(help="A buffer: a SQLite file or a postgresql:// URL.")],
) -> None:
    """Print a buffer's size by source and domain, episodes, tasks and embedder."""
    try:
        stats = buffer_stats(buffer)
    except DataError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from exc
    typer.echo(stats.format())


@buffer_app.command("convert")
def convert_command(
    source_file: Annotated[Path, typer.Argument(help="The file to convert.")],
    out: Annotated[Path, typer.Option("--out", help="The converted file.")],
    from_format: Annotated[
        str | None,
        typer.Option(
            "--from",
            help="Read SOURCE_FILE in this format (agentgym: AgentGym's JSON list or JSON Lines of "
            "conversations) and write offline JSONL.",
        ),
    ] = None,
    to_format: Annotated[
        str | None,
        typer.Option("--to", help="Read offline JSONL and write this format (agentgym: one JSON list)."),
    ] = None,
    domain: Annotated[
        str | None,
        typer.Option(
            help="The domain pack: with --from, the one whose grammar and instructions read the "
            "conversations (required); with --to, the one whose agent prompt starts a trajectory "
            "recorded here (default: the first task's domain)."
        ),
    ] = None,
) -> None:
    """Convert trajectories between another project's format and the offline JSONL (docs/data-format.md).

    With --to agentgym, a trajectory that was not read from AgentGym starts with the domain's
    agent prompt answered "Ok.", as AgentGym's do.
    """
    given = [f"{flag} {value}" for flag, value in (("--from", from_format), ("--to", to_format)) if value]
    if len(given) != 1 or (from_format or to_format) not in FORMATS:
        raise ConfigurationError(
            f"give one of --from or --to, with a format of {', '.join(FORMATS)}; got "
            f"{' and '.join(given) or 'neither'}"
        )
    if from_format is not None:
        if domain is None:
            raise ConfigurationError(
                f"--from {from_format} needs --domain, the pack the conversations are of"
            )
        trajectories = from_agentgym(read_agentgym(source_file), get_domain(domain))
        written = write_trajectories(out, trajectories)
        steps = sum(len(t.steps) for t in trajectories)
        unanswered = sum("final_action" in t.metadata["agentgym"] for t in trajectories)
        typer.echo(
            f"{written} trajectories, {steps} steps ({unanswered} last actions without a recorded "
            f"outcome, kept in metadata) -> {out}"
        )
        return
    recorded = read_trajectories(source_file)
    name = domain or (recorded[0].task.domain if recorded else None)
    items = to_agentgym(recorded, prompt=get_domain(name).agent_prompt if name else None)
    typer.echo(f"{write_agentgym(out, items)} AgentGym items -> {out}")
