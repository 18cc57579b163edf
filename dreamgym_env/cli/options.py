"""Options and output helpers that several ``dreamgym`` commands share (one wording for each)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from dreamgym_env.envs.registry import default_domain, get_domain

if TYPE_CHECKING:
    from dreamgym_env.domain import Domain

DomainOption = Annotated[
    str | None, typer.Option(help="Domain pack (default: the first registered, see `dreamgym envs`).")
]
PolicyOption = Annotated[str, typer.Option(help="Policy: expert, noisy or random.")]
PolicySeedOption = Annotated[int, typer.Option(help="Seed of the task draw and the policy.")]
SplitOption = Annotated[str, typer.Option(help="Task split: train or test.")]
StateModeOption = Annotated[
    str | None,
    typer.Option(
        help="State mode of the synthetic env: 'structured' (the default where the domain has a state "
        "schema) or 'text'."
    ),
]
EndWeightOption = Annotated[
    int, typer.Option(min=1, help="Times each episode-end example appears in the training set.")
]
DecisiveWeightOption = Annotated[
    int,
    typer.Option(
        min=1,
        help="Times each example appears whose action's verb ends the episode in some examples and "
        "not in others (the verbs are found in the data).",
    ),
]
MaxMinutesOption = Annotated[
    float | None, typer.Option(min=0.0, help="Stop after the step that passes this much training time.")
]
OptimiserStepsOption = Annotated[int, typer.Option(min=1, help="Optimiser steps.")]
LearningRateOption = Annotated[float, typer.Option(min=0.0, help="Peak learning rate.")]
LoraRankOption = Annotated[int, typer.Option(min=1, help="LoRA rank.")]
ResumeOption = Annotated[bool, typer.Option(help="Continue from the last checkpoint in --out.")]
TrainingSeedOption = Annotated[
    int, typer.Option(help="Seed of the data order and the initialisation of the trained weights.")
]
ThreadsOption = Annotated[
    int | None, typer.Option(min=1, help="CPU threads (default: torch's; fewer on a busy machine).")
]


def domain_or_default(name: str | None) -> Domain:
    """The domain ``--domain`` names, or the first registered one."""
    return get_domain(name) if name else default_domain()


def print_plain(console: Console, text: str) -> None:
    """Print ``text`` as it is: no rich markup or highlighting, long lines not cut."""
    console.print(text, markup=False, highlight=False, soft_wrap=True)
