"""``dreamgym experience dataset|train|distill|eval|build``: train an experience model from a domain's reference env or recorded trajectories.

:data:`experience_app` is the Typer group the ``dreamgym`` command mounts with
``app.add_typer(experience_app, name="experience")``; the work is done by
:mod:`dreamgym_env.training` (the ``train`` extra).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated, Any, Literal, cast

import typer
from rich.console import Console

from dreamgym_env.cli.errors import DreamGymTyper
from dreamgym_env.cli.options import (
    DecisiveWeightOption,
    EndWeightOption,
    LearningRateOption,
    LoraRankOption,
    MaxMinutesOption,
    OptimiserStepsOption,
    ResumeOption,
    ThreadsOption,
    TrainingSeedOption,
    domain_or_default,
    print_plain,
)
from dreamgym_env.envs.registry import get_domain

experience_app = DreamGymTyper(
    help="Train an experience model: distillation data, LoRA fine-tuning, fidelity on held-out tasks.",
    no_args_is_help=True,
)
console = Console()


def _training_summary(stats: dict[str, Any]) -> str:
    """A training run's manifest ``stats`` in a sentence: steps, data, tokens, time, loss."""
    return (
        f"{stats['steps']} steps on {stats['examples']} examples ({stats['epochs']} epochs), "
        f"{stats['tokens']} tokens in {stats['seconds']:.0f} s ({stats['tokens_per_s']} tokens/s, "
        f"{stats['device']}); loss {stats['first_loss']} -> {stats['final_loss']}"
    )


TrajectoriesOption = Annotated[
    Path | None,
    typer.Option(
        help="Recorded episodes to learn from instead of the reference env: JSONL, one Trajectory a "
        "line (docs/data-format.md); any domain, with or without a reference env."
    ),
]
HeldOutOption = Annotated[
    Path | None,
    typer.Option(
        help="Recorded episodes of the test tasks (same format; default: a fifth of the trajectories' "
        "tasks, drawn with the seed)."
    ),
]
TeacherModelOption = Annotated[str | None, typer.Option(help="The teacher's model name.")]


@experience_app.command("dataset")
def dataset_command(
    out: Annotated[Path, typer.Option(help="Output JSONL file (one SFT example a line).")],
    domain: Annotated[
        str | None,
        typer.Option(help="Domain pack (default: the --from file's, else the first registered)."),
    ] = None,
    from_file: Annotated[
        Path | None,
        typer.Option(
            "--from",
            help="Recorded episodes (JSONL, one Trajectory a line, docs/data-format.md): every valid step "
            "an example, its requests carrying no pack data (supply none); no reference env is played.",
        ),
    ] = None,
    held_out: HeldOutOption = None,
    n: Annotated[
        int | None,
        typer.Option(min=1, help="Train examples (expert, noisy, random in equal shares; default 600)."),
    ] = None,
    test_n: Annotated[
        int | None, typer.Option(min=0, help="Test examples, from the test tasks (default: n / 5).")
    ] = None,
    seed: Annotated[
        int, typer.Option(help="Seed of the episodes, policies and draws (with --from: the split).")
    ] = 0,
    teacher_url: Annotated[
        str | None,
        typer.Option(
            help="OpenAI-compatible endpoint of a teacher that writes the reasoning (and, from the reference "
            "env, task variations)."
        ),
    ] = None,
    teacher_model: TeacherModelOption = None,
) -> None:
    """Write SFT examples: the exact requests the backends send, with the reference env's or the recorded answers."""
    from dreamgym_env.training.dataset import DEFAULT_TRAIN_EXAMPLES, build_dataset
    from dreamgym_env.training.recorded import RecordedSplit, build_recorded_dataset, file_domain

    if from_file is None and held_out is not None:
        raise typer.BadParameter("--held-out goes with --from (recorded episodes)")
    if from_file is not None and (n, test_n) != (None, None):
        raise typer.BadParameter(
            "--n and --test-n draw from a reference env; --from takes every recorded step"
        )
    pack = (
        get_domain(domain or file_domain(from_file)) if from_file is not None else domain_or_default(domain)
    )
    recorded = RecordedSplit.read(pack, from_file, held_out, seed=seed) if from_file is not None else None
    teacher = None
    if teacher_url is not None:
        from dreamgym_env.curriculum.chat import EndpointChat
        from dreamgym_env.experience.config import UNSET, EndpointConfig

        teacher = EndpointChat(EndpointConfig.resolve(base_url=teacher_url, model=teacher_model or UNSET))
    try:
        if recorded is not None:
            summary = build_recorded_dataset(recorded, out, teacher=teacher)
        else:
            summary = build_dataset(
                pack, n or DEFAULT_TRAIN_EXAMPLES, out, test_n=test_n, seed=seed, teacher=teacher
            )
    finally:
        if teacher is not None:
            teacher.close()
    print_plain(console, summary.format())


@experience_app.command("train")
def train_command(
    data: Annotated[Path, typer.Option(help="Dataset JSONL (`dreamgym experience dataset`).")],
    out: Annotated[
        Path, typer.Option(help="Output directory (adapter, GGUF adapter, checkpoints, manifest).")
    ],
    base: Annotated[
        str, typer.Option(help="Base model: a preset (qwen-0.5b), a GGUF file or a Hugging Face directory.")
    ] = "qwen-0.5b",
    max_steps: OptimiserStepsOption = 200,
    end_weight: EndWeightOption = 1,
    decisive_weight: DecisiveWeightOption = 1,
    lora_r: LoraRankOption = 16,
    lora_alpha: Annotated[int, typer.Option(min=1, help="LoRA alpha (scale alpha / r).")] = 32,
    learning_rate: LearningRateOption = 2e-4,
    batch_size: Annotated[int, typer.Option(min=1, help="Examples per device step.")] = 1,
    grad_accum: Annotated[int, typer.Option(min=1, help="Device steps per optimiser step.")] = 1,
    save_steps: Annotated[int, typer.Option(min=1, help="A checkpoint every this many steps.")] = 20,
    seed: TrainingSeedOption = 0,
    gradient_checkpointing: Annotated[
        bool, typer.Option(help="Recompute activations in the backward pass: less memory, more time.")
    ] = False,
    threads: ThreadsOption = None,
    max_minutes: MaxMinutesOption = None,
    resume: ResumeOption = False,
) -> None:
    """Fine-tune a LoRA adapter with TRL's SFTTrainer, loss on the answer only (CPU, or a GPU when present)."""
    from dreamgym_env.training.train import TrainConfig, train_experience_model

    config = TrainConfig(
        max_steps=max_steps,
        end_weight=end_weight,
        decisive_weight=decisive_weight,
        lora_r=lora_r,
        lora_alpha=lora_alpha,
        learning_rate=learning_rate,
        batch_size=batch_size,
        grad_accum=grad_accum,
        save_steps=save_steps,
        seed=seed,
        gradient_checkpointing=gradient_checkpointing,
        threads=threads,
        max_minutes=max_minutes,
    )
    trained = train_experience_model(data, base, out, config, resume=resume)
    print_plain(
        console,
        f"{out}: {_training_summary(trained.stats)}; "
        f"GGUF adapter: {trained.adapter_gguf or 'none (architecture not supported)'}",
    )


@experience_app.command("distill")
def distill_command(
    data: Annotated[
        Path, typer.Option(help="Dataset JSONL (`dreamgym experience dataset`; thousands of rows).")
    ],
    out: Annotated[
        Path, typer.Option(help="Output directory (tokenizer, checkpoints, model, model.gguf, manifest).")
    ],
    size: Annotated[str, typer.Option(help="Model size: xs (1.3M parameters), s (4.5M), m (13M).")] = "s",
    vocab_size: Annotated[
        int, typer.Option(min=300, help="Tokens of the BPE tokenizer trained on the data.")
    ] = 4096,
    max_steps: OptimiserStepsOption = 600,
    batch_size: Annotated[int, typer.Option(min=1, help="Examples per step.")] = 16,
    learning_rate: LearningRateOption = 3e-3,
    end_weight: EndWeightOption = 4,
    decisive_weight: DecisiveWeightOption = 1,
    seed: TrainingSeedOption = 0,
    threads: ThreadsOption = None,
    max_minutes: MaxMinutesOption = None,
    resume: ResumeOption = False,
) -> None:
    """Train a small experience model from scratch on a pack's transitions (fast on a CPU; served alone)."""
    from dreamgym_env.training.distill import DEFAULT_DISTILL_CONFIG, distill_experience_model

    config = dataclasses.replace(
        DEFAULT_DISTILL_CONFIG,
        max_steps=max_steps,
        batch_size=batch_size,
        learning_rate=learning_rate,
        end_weight=end_weight,
        decisive_weight=decisive_weight,
        seed=seed,
        threads=threads,
        max_minutes=max_minutes,
    )
    trained = distill_experience_model(
        data, out, size=size, vocab_size=vocab_size, config=config, resume=resume
    )
    print_plain(
        console,
        f"{out}: a {trained.config['parameters'] / 1e6:.1f}M-parameter model, "
        f"{_training_summary(trained.stats)}; GGUF: {trained.model_gguf}",
    )


@experience_app.command("eval")
def eval_command(
    model: Annotated[
        str,
        typer.Option(help="A trained model directory, a GGUF file or a preset (the base, for comparison)."),
    ],
    n: Annotated[int, typer.Option(min=1, help="Held-out transitions (test tasks).")] = 100,
    domain: Annotated[str | None, typer.Option(help="Domain (default: the trained model's).")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the sampled transitions.")] = 0,
    backend: Annotated[
        str, typer.Option(help="'local' (llama.cpp, GGUF adapter) or 'transformers'.")
    ] = "local",
    baseline: Annotated[
        str | None,
        typer.Option(
            help="Also measure this model (e.g. the base preset) on the same transitions, batch by batch."
        ),
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="Also write the result as JSON here (after every batch).")
    ] = None,
) -> None:
    """The fidelity report on held-out transitions (per field, reward, episode end, seconds a transition)."""
    from dreamgym_env.training.evaluate import Backend, EvalResult, compare_models, write_result

    def report(results: list[EvalResult]) -> None:  # with a baseline: the numbers after every batch
        print_plain(
            console,
            f"{results[0].report.n} of {n}: "
            + "; ".join(
                f"{r.model}: reward {r.report.reward_agreement:.2f}, done {r.report.done_agreement:.2f}, "
                f"valid {r.report.valid:.2f}"
                for r in results
            ),
        )
        if out is not None:
            write_result(results, out)

    results = compare_models(
        [model] if baseline is None else [baseline, model],
        n=n,
        domain=domain,
        seed=seed,
        backend=cast(Backend, backend),
        on_batch=None if baseline is None else report,
    )
    for result in results:
        print_plain(console, result.format())
    if baseline is None and out is not None:
        write_result(results[0], out)


@experience_app.command("build")
def build_command(
    domain: Annotated[str, typer.Option(help="The domain pack whose trained model to rebuild.")],
    trajectories: TrajectoriesOption = None,
    held_out: HeldOutOption = None,
    teacher_url: Annotated[
        str | None,
        typer.Option(
            help="With --trajectories: an OpenAI-compatible endpoint of a teacher that writes the reasoning."
        ),
    ] = None,
    teacher_model: TeacherModelOption = None,
    kind: Annotated[
        str | None,
        typer.Option(
            help="adapter (LoRA of the 0.5B base) or distilled (small, from scratch); default: the one the pack prefers."
        ),
    ] = None,
    work: Annotated[
        Path | None,
        typer.Option(
            help="Working folder: data, training run, raw evaluations (default runs/experience/<domain>-<kind>); "
            "with --trajectories, <domain>-<kind>-<file name> there."
        ),
    ] = None,
    install: Annotated[
        Path | None,
        typer.Option(
            help="Where the model, manifest and report go (default: the pack's experience_model/, distilled/ in it; "
            "with --trajectories the work folder's install/)."
        ),
    ] = None,
    n: Annotated[
        int | None, typer.Option(min=1, help="Train examples (default: 600 for an adapter, 6000 distilled).")
    ] = None,
    steps: Annotated[
        int | None,
        typer.Option(min=1, help="Optimiser steps (default: 100 of one example; distilled 2400 of 16)."),
    ] = None,
    end_weight: Annotated[
        int | None,
        typer.Option(min=1, help="Times each episode end is seen a pass (default 4; distilled 2)."),
    ] = None,
    decisive_weight: DecisiveWeightOption = 1,
    end_share: Annotated[
        str | None,
        typer.Option(
            help="Share of train examples that end an episode, from 0 to 1, or 'natural' (their rate in "
            "the episodes; the default for an adapter; distilled 0.25)."
        ),
    ] = None,
    near_miss_share: Annotated[
        float,
        typer.Option(
            min=0.0,
            max=1.0,
            help="Share of train examples that are near misses: a verb that ends episodes, not ending "
            "this one (ALFWorld's put of the wrong object), from the policies' episodes.",
        ),
    ] = 0.0,
    max_minutes: MaxMinutesOption = None,
    lora_r: LoraRankOption = 8,
    eval_n: Annotated[int, typer.Option(min=1, help="Held-out transitions, base and trained.")] = 100,
    rollouts: Annotated[
        int,
        typer.Option(
            min=0, help="Synthetic expert, noisy and random episodes each, replayed in the reference env."
        ),
    ] = 50,
    stages: Annotated[
        str, typer.Option(help="Comma-separated stages to run: data,train,export,eval,rollouts,report.")
    ] = "data,train,export,eval,rollouts,report",
    threads: Annotated[int | None, typer.Option(min=1, help="CPU threads (default: all cores).")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the data, the adapter and the evaluation draws.")] = 0,
    remeasure_base: Annotated[
        bool,
        typer.Option(
            help="Measure the base again even where an earlier build measured it on the same transitions."
        ),
    ] = False,
    measure_base: Annotated[
        bool,
        typer.Option(
            help="Measure the base beside the trained model (--no-measure-base: the trained model alone, "
            "where the base is not at hand)."
        ),
    ] = True,
    remeasure: Annotated[
        bool,
        typer.Option(
            help="Measure the trained model again, held-out transitions and rollouts, even where its "
            "file was measured (after a change to the pack's requests or rules that the prompt "
            "fingerprint does not cover)."
        ),
    ] = False,
) -> None:
    """Rebuild a pack's trained experience model: data, training, export, evaluation, report (resumable)."""
    import logging

    from dreamgym_env.training.build import BuildConfig, build_pack_model

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    pack = get_domain(domain)
    if trajectories is None and (held_out, teacher_url, teacher_model) != (None, None, None):
        raise typer.BadParameter("--held-out, --teacher-url and --teacher-model go with --trajectories")
    if trajectories is not None and (n is not None or end_share is not None or near_miss_share):
        raise typer.BadParameter(
            "--n, --end-share and --near-miss-share draw from a reference env; --trajectories takes every "
            "recorded step"
        )
    chosen_kind = kind or pack.preferred_experience_model
    if chosen_kind not in ("adapter", "distilled"):
        raise typer.BadParameter(f"--kind must be adapter or distilled, got {chosen_kind!r}")
    natural = end_share is not None and end_share.strip().lower() == "natural"
    try:
        share = None if end_share is None or natural else float(end_share)
    except ValueError:
        raise typer.BadParameter(
            f"--end-share must be a number from 0 to 1 or 'natural', got {end_share!r}"
        ) from None
    config = BuildConfig.for_kind(
        cast(Literal["adapter", "distilled"], chosen_kind), n=n, steps=steps, end_weight=end_weight,
        decisive_weight=decisive_weight, end_share=share, near_miss_share=near_miss_share,
        max_minutes=max_minutes, lora_r=lora_r, lora_alpha=2 * lora_r, eval_n=eval_n, rollouts=rollouts,
        seed=seed, threads=threads, remeasure_base=remeasure_base, remeasure=remeasure,
        measure_base=measure_base, trajectories=None if trajectories is None else str(trajectories),
        held_out=None if held_out is None else str(held_out), teacher_url=teacher_url, teacher_model=teacher_model,
    )  # fmt: skip
    if natural:
        config = dataclasses.replace(config, end_share=None)
    chosen = tuple(part.strip() for part in stages.split(",") if part.strip())
    recorded = f"-{trajectories.stem}" if trajectories is not None else ""
    work = work or Path("runs") / "experience" / f"{pack.name}-{chosen_kind}{recorded}"
    shipped = build_pack_model(pack, work, config, install=install, stages=chosen)
    print_plain(console, f"{pack.name}: {shipped.describe()}; {shipped.directory}")
