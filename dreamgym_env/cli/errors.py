"""How the ``dreamgym`` command reports the package's errors: one line, exit code 2.

A :class:`~dreamgym_env.errors.DreamGymError` (an unknown domain or policy, a model that keeps
failing, a damaged file) is the user's to fix, not a bug: its message is printed on one line to
stderr, without a traceback. Any other exception is a bug and keeps Typer's traceback.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import typer

from dreamgym_env.errors import DreamGymError

ERROR_EXIT_CODE = 2
F = TypeVar("F", bound=Callable[..., Any])


def one_line(message: str) -> str:
    """``message`` with its line breaks and runs of spaces folded into single spaces."""
    return " ".join(message.split())


def exit_on_error(command: F) -> F:
    """Wrap a command so that a ``DreamGymError`` prints ``error: <message>`` and exits with 2."""

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except DreamGymError as exc:
            typer.echo(f"error: {one_line(str(exc))}", err=True)
            raise typer.Exit(ERROR_EXIT_CODE) from None

    return run  # type: ignore[return-value]


class DreamGymTyper(typer.Typer):
    """A ``typer.Typer`` whose commands report a ``DreamGymError`` in one line (:func:`exit_on_error`).

    Help is click's plain text, not rich's panels: click wraps it to the terminal, where rich's
    option tables cut words longer than their narrow help column (``DreamGym/WebShop-…`` at 80
    columns) and keep the source's line breaks inside rewrapped paragraphs.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("rich_markup_mode", None)
        super().__init__(*args, **kwargs)

    def command(self, *args: Any, **kwargs: Any) -> Callable[[F], F]:  # type: ignore[override]
        register = super().command(*args, **kwargs)

        def decorator(function: F) -> F:
            register(exit_on_error(function))
            return function

        return decorator
