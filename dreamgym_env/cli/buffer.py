"""``dreamgym buffer build`` and ``dreamgym buffer stats``: the replay buffer from the command line.

The functions work without the CLI; :data:`buffer_app` is the Typer group the ``dreamgym``
command mounts with ``app.add_typer(buffer_app, name="buffer")``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Annotated

import typer

from dreamgym_env.cli.errors import DreamGymTyper
from dreamgym_env.errors import DataError
from dreamgym_env.replay.buffer import ExperienceReplayBuffer
from dreamgym_env.replay.records import BufferStats
from dreamgym_env.types import Source


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
