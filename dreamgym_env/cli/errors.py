"""How the ``dreamgym`` command reports the package's errors: one line, exit code 2.

A :class:`~dreamgym_env.errors.DreamGymError` (an unknown domain or policy, a model that keeps
failing, a damaged file) is the user's to fix, not a bug: its message is printed on one line to
stderr, without a traceback. Any other exception is a bug and keeps Typer's traceback. Ctrl-C
ends a command with status 130; the console script then prints ``interrupted`` and leaves at
once (:func:`interrupt`, :func:`leave_interrupted`).
"""

from __future__ import annotations

import functools
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

import typer

from dreamgym_env.errors import DreamGymError

ERROR_EXIT_CODE = 2
INTERRUPTED_EXIT_CODE = 130
"""The status after Ctrl-C: 128 + SIGINT, what a shell reports for a process that SIGINT ended."""
CLEANUP_GRACE_S = 0.5
"""How long a command's cleanup may take after Ctrl-C before the process leaves without it."""
_leaving = threading.RLock()
"""Held by the thread that prints ``interrupted`` and leaves: another one waits for that exit."""
F = TypeVar("F", bound=Callable[..., Any])


def one_line(message: str) -> str:
    """``message`` with its line breaks and runs of spaces folded into single spaces."""
    return " ".join(message.split())


def exit_on_error(command: F) -> F:
    """Wrap a command so that a ``DreamGymError`` prints ``error: <message>`` and exits with 2.

    Ctrl-C exits with 130, once the command's own cleanup (``finally``, ``with``) has run.
    """

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except DreamGymError as exc:
            typer.echo(f"error: {one_line(str(exc))}", err=True)
            raise typer.Exit(ERROR_EXIT_CODE) from None
        except KeyboardInterrupt:
            raise typer.Exit(INTERRUPTED_EXIT_CODE) from None

    return run  # type: ignore[return-value]


def interrupt(*_signal: object) -> NoReturn:
    """The console script's SIGINT handler: ``KeyboardInterrupt``, with a bound on the cleanup.

    The command's ``finally`` and ``with`` blocks close its files; one that blocks (closing the
    embedded model waits for generations that stop only at their next token) is cut after
    :data:`CLEANUP_GRACE_S`, and a second Ctrl-C leaves at once.
    """
    signal.signal(signal.SIGINT, leave_interrupted)
    timer = threading.Timer(CLEANUP_GRACE_S, leave_interrupted)
    timer.daemon = True
    timer.start()
    raise KeyboardInterrupt


def leave_interrupted(*_signal: object) -> NoReturn:
    """Print ``interrupted`` and end the process now with status 130 (also a SIGINT handler).

    The interpreter's shutdown is skipped: it would wait for llama.cpp's threads (generations
    still running, a model never closed) and run atexit callbacks that a Ctrl-C breaks
    (logging's shutdown: ``cannot release un-acquired lock``). stdout and stderr are flushed.
    """
    try:
        _leaving.acquire()
        typer.echo("interrupted", err=True)
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(INTERRUPTED_EXIT_CODE)


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
