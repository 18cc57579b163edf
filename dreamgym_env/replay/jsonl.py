"""The offline data format: one JSON line per :class:`~dreamgym_env.types.Trajectory`.

The format is documented in docs/data-format.md; :mod:`dreamgym_env.agents.rollouts` collects
trajectories from any text env with a policy.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from pydantic import ValidationError

from dreamgym_env.errors import DataError
from dreamgym_env.types import Trajectory

PathLike = str | Path


def write_trajectories(path: PathLike, trajectories: Iterable[Trajectory], *, append: bool = False) -> int:
    """Write one JSON line per trajectory; returns how many were written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with path.open("a" if append else "w", encoding="utf-8") as handle:
        for trajectory in trajectories:
            handle.write(trajectory.model_dump_json() + "\n")
            count += 1
    return count


def numbered_lines(path: Path, what: str) -> Iterator[tuple[int, str]]:
    """The non-blank lines of a JSONL file with their numbers; unreadable: a :class:`DataError` naming ``what``."""
    try:
        handle = path.open(encoding="utf-8")
    except OSError as exc:
        raise DataError(f"cannot read {what} from {path}: {exc.strerror or exc}") from None
    with handle:
        for number, line in enumerate(handle, 1):
            if line.strip():
                yield number, line


def numbered_trajectories(path: PathLike) -> Iterator[tuple[int, Trajectory]]:
    """Read trajectories lazily with their line numbers; a bad line raises :class:`DataError` naming the file and line."""
    path = Path(path)
    for number, line in numbered_lines(path, "offline trajectories"):
        try:
            yield number, Trajectory.model_validate_json(line)
        except ValidationError as exc:
            raise DataError(f"{path}:{number}: not a trajectory: {exc.errors()[0]['msg']}") from exc


def iter_trajectories(path: PathLike) -> Iterator[Trajectory]:
    """Read trajectories lazily; a bad line raises :class:`DataError` naming the file and line."""
    return (trajectory for _, trajectory in numbered_trajectories(path))


def read_trajectories(path: PathLike) -> list[Trajectory]:
    """Read every trajectory of a JSONL file."""
    return list(iter_trajectories(path))
