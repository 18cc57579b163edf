"""``dreamgym fidelity``: how faithfully an experience model predicts a domain's reference env, or recorded steps.

Samples reference transitions (:mod:`dreamgym_env.bench.sampling`), asks the model for each in
every mode and grounding chosen (:mod:`dreamgym_env.bench.fidelity_runs`), with ``--rollouts N``
replays N synthetic expert, noisy and random episodes in the reference env (:mod:`dreamgym_env.bench.consistency`),
and writes the reports to ``--out``: ``fidelity.md`` (also printed), ``fidelity.json``, two PNG
plots (with matplotlib, the ``bench`` extra) and ``fidelity.html`` (:mod:`dreamgym_env.bench.html_report`).
With ``--trajectories FILE`` it asks the model the recorded steps of an offline JSONL file
instead, one step at a time, and makes no reference env (a domain known only from its recordings).
Wire it with ``app.command("fidelity")(fidelity_command)``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, cast

import typer

from dreamgym_env.cli.options import DomainOption, domain_or_default
from dreamgym_env.domain import SUPPLIES, Supply
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.errors import ConfigurationError

if TYPE_CHECKING:
    from dreamgym_env.bench.fidelity import StateMode
    from dreamgym_env.bench.fidelity_runs import FidelityResults, Grounding
    from dreamgym_env.domain import Domain, RecordedLookup
    from dreamgym_env.experience.base import ExperienceModel

DEFAULT_SAMPLED = 100
"""Reference transitions sampled when ``--n`` is not given."""


def model_label(model: ExperienceModel) -> str:
    """A short name of ``model`` for the reports: the oracle and its error rate, or the backend's model id."""
    error_rate = getattr(model, "error_rate", None)
    if model.model_id == "oracle" and error_rate is not None:
        return f"oracle (error rate {error_rate:g})"
    return model.model_id


def _choices(text: str, known: tuple[str, ...], option: str) -> list[str]:
    chosen = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [part for part in chosen if part not in known]
    if unknown or not chosen:
        raise ConfigurationError(f"{option} takes a comma-separated list of {', '.join(known)}; got {text!r}")
    return chosen


def write_reports(results: FidelityResults, out: Path) -> list[Path]:
    """Write the markdown, JSON, PNG (where matplotlib is installed) and HTML reports; return their paths."""
    from dreamgym_env.bench.html_report import write_html

    out.mkdir(parents=True, exist_ok=True)
    markdown = out / "fidelity.md"
    markdown.write_text(results.to_markdown(), encoding="utf-8")
    data = out / "fidelity.json"
    data.write_text(json.dumps(results.to_dict(), indent=2), encoding="utf-8")
    images: list[Path] = []
    try:
        from dreamgym_env.bench.fidelity_plots import plot_by_action, plot_by_field

        images.append(plot_by_action(results, out / "fidelity_by_action.png"))
        by_field = plot_by_field(results, out / "fidelity_by_field.png")
        images += [by_field] if by_field is not None else []
    except ConfigurationError as exc:  # no matplotlib: the other reports still come
        typer.echo(f"no plots: {exc}", err=True)
    return [markdown, data, *images, write_html(results, out / "fidelity.html", images)]


def fidelity_command(
    domain: DomainOption = None,
    model: Annotated[
        str,
        typer.Option(
            help="Experience model: 'local[:preset or .gguf]', 'endpoint[:model name]' or "
            "'oracle[:error_rate]' (the reference env, corrupted at that rate)."
        ),
    ] = "local",
    n: Annotated[
        int | None,
        typer.Option(
            min=1,
            help=f"Reference transitions, a third from each policy (default {DEFAULT_SAMPLED}); with "
            "--trajectories, this many recorded steps drawn at random (default: every valid step).",
        ),
    ] = None,
    trajectories: Annotated[
        Path | None,
        typer.Option(
            help="Measure against the recorded steps of this offline JSONL file (docs/data-format.md), "
            "one step at a time, in the file's state mode: no reference env is made. The domain "
            "defaults to the file's."
        ),
    ] = None,
    supply: Annotated[
        str | None,
        typer.Option(
            help="What fixes next-state fields before the model answers: 'pack' (the domain's world "
            "data and code), 'replay' (the structural rules and the next state of a recorded real "
            "transition of the same state and action, from --replay-from) or 'none' (the structural "
            "rules only). Default: pack; none with --trajectories."
        ),
    ] = None,
    replay_from: Annotated[
        Path | None,
        typer.Option(
            help="With --supply replay: the recorded episodes (offline JSONL) whose transitions are "
            "looked up. Default: the expert episodes of the train split that --grounding replay "
            "retrieves from, played in the reference env (required with --trajectories)."
        ),
    ] = None,
    modes: Annotated[
        str | None, typer.Option(help="State modes, comma-separated: structured, text (default both).")
    ] = None,
    grounding: Annotated[
        str | None,
        typer.Option(
            help="Groundings, comma-separated: none, replay (k demonstrations of expert episodes); "
            "default both."
        ),
    ] = None,
    k: Annotated[
        int | None, typer.Option(min=0, help="Demonstrations per request when grounded (default 4).")
    ] = None,
    history_len: Annotated[
        int | None,
        typer.Option(
            min=0,
            help="Past steps in each request (default 4; the whole episode for the oracle where its "
            "reference env cannot be restored from a state).",
        ),
    ] = None,
    batch_size: Annotated[int, typer.Option(min=1, help="Requests sent to the model at once.")] = 4,
    rollouts: Annotated[
        int,
        typer.Option(
            min=0,
            help="Rollout consistency: this many synthetic episodes of each --rollout-policies "
            "policy (first mode, ungrounded), replayed in the reference env; 0: none.",
        ),
    ] = 0,
    rollout_policies: Annotated[
        str | None,
        typer.Option(
            help="Policies of the rollouts, comma-separated: expert, noisy, random (default: all "
            "three; random finds rewards a model pays to a policy far from its data)."
        ),
    ] = None,
    seed: Annotated[
        int,
        typer.Option(
            help="Seed of the sample (or the draw of recorded steps), the grounding buffer and the oracle."
        ),
    ] = 0,
    out: Annotated[Path, typer.Option(help="Folder of the reports.")] = Path("runs/fidelity"),
) -> None:
    """Fidelity of an experience model per action type and state field, in text and structured mode, grounded and not, or on recorded steps."""
    from dreamgym_env.agents.registry import POLICY_NAMES
    from dreamgym_env.agents.rollouts import progress_bar
    from dreamgym_env.bench.consistency import CONSISTENCY_POLICIES, ConsistencyReport, rollout_consistency
    from dreamgym_env.bench.fidelity_runs import (
        GROUNDINGS,
        MODES,
        FidelityResults,
        run_fidelity,
        run_recorded,
    )
    from dreamgym_env.bench.sampling import recorded_samples, sample_transitions
    from dreamgym_env.envs.models import model_kind
    from dreamgym_env.replay.jsonl import read_trajectories

    chosen_supply = _supply(supply, recorded=trajectories is not None)
    if replay_from is not None and chosen_supply != "replay":
        raise ConfigurationError("--replay-from is the recorded episodes of --supply replay: pass both")
    if chosen_supply == "replay" and trajectories is not None and replay_from is None:
        raise ConfigurationError(
            "--supply replay with --trajectories needs --replay-from: the recorded episodes it looks transitions up in"
        )
    model_kind(model)  # a misspelt kind is refused naming the known ones
    consistency: list[ConsistencyReport] = []
    if trajectories is not None:
        needs_reference = [
            option
            for option, given in (
                ("--modes", modes is not None),
                ("--grounding", grounding is not None),
                ("--k", k is not None),
                ("--rollouts", rollouts > 0),
                ("--rollout-policies", rollout_policies is not None),
            )
            if given
        ]
        if needs_reference:
            raise ConfigurationError(
                f"--trajectories measures the recorded steps as they are, without a reference env: "
                f"{', '.join(needs_reference)} cannot apply"
            )
        recorded = read_trajectories(trajectories)
        if not recorded:
            raise ConfigurationError(f"{trajectories} holds no trajectory")
        pack = get_domain(domain or recorded[0].task.domain)
        with _opened(pack, model, seed, history_len) as (experience_model, history_len):
            samples = recorded_samples(
                recorded,
                pack,
                n,
                seed=seed,
                history_len=history_len,
                supply=chosen_supply,
                recorded=_replay_lookup(pack, chosen_supply, replay_from, seed),
            )
            with progress_bar(len(samples), "fidelity", unit="tr") as bar:
                rows = [
                    run_recorded(experience_model, pack, samples, batch_size=batch_size, progress=bar.update)
                ]
    else:
        pack = domain_or_default(domain)
        chosen_modes = cast("list[StateMode]", _choices(modes or ",".join(MODES), MODES, "--modes"))
        groundings = cast(
            "list[Grounding]", _choices(grounding or ",".join(GROUNDINGS), GROUNDINGS, "--grounding")
        )
        policies = (
            list(CONSISTENCY_POLICIES)
            if rollout_policies is None
            else _choices(rollout_policies, POLICY_NAMES, "--rollout-policies")
        )
        with _opened(pack, model, seed, history_len) as (experience_model, history_len):
            samples = sample_transitions(
                pack,
                n or DEFAULT_SAMPLED,
                seed=seed,
                history_len=history_len,
                supply=chosen_supply,
                recorded=_replay_lookup(pack, chosen_supply, replay_from, seed),
            )
            with progress_bar(
                len(samples) * len(chosen_modes) * len(groundings), "fidelity", unit="tr"
            ) as bar:
                rows = run_fidelity(
                    experience_model,
                    pack,
                    samples,
                    modes=chosen_modes,
                    groundings=groundings,
                    seed=seed,
                    k=k,
                    batch_size=batch_size,
                    progress=bar.update,
                    on_row=lambda row: bar.set_postfix(done=row.key, refresh=False),
                    supply=chosen_supply,
                )
            if rollouts:
                with progress_bar(rollouts * len(policies), "rollouts", unit="ep") as bar:
                    consistency = rollout_consistency(
                        experience_model,
                        pack,
                        episodes=rollouts,
                        policies=policies,
                        state_mode=chosen_modes[0],
                        history_len=history_len,
                        seed=seed,
                        progress=bar.update,
                    )
    results = FidelityResults(
        pack.name,
        model_label(experience_model),
        seed,
        history_len,
        samples,
        rows,
        consistency,
        supply=chosen_supply,
        trajectories=str(trajectories) if trajectories is not None else None,
    )
    paths = write_reports(results, out)
    typer.echo(results.to_markdown())
    typer.echo("reports: " + ", ".join(str(p) for p in paths))


@contextmanager
def _opened(
    pack: Domain, model: str, seed: int, history_len: int | None
) -> Iterator[tuple[ExperienceModel, int]]:
    """The experience model ``--model`` names, its weights loaded, and the past steps its requests carry."""
    from dreamgym_env.bench.fidelity import DEFAULT_HISTORY_LEN
    from dreamgym_env.envs.models import experience_model_for

    with closing(experience_model_for(pack, model, seed=seed)) as experience_model:
        if history_len is None:
            whole = not getattr(experience_model, "restorable", True)
            history_len = max(DEFAULT_HISTORY_LEN, pack.max_episode_steps) if whole else DEFAULT_HISTORY_LEN
        load = getattr(getattr(experience_model, "inner", experience_model), "load", None)
        if callable(load):
            typer.echo("loading the model's weights ...", err=True)
            load()
        yield experience_model, history_len


def _replay_lookup(
    pack: Domain, supply: Supply, replay_from: Path | None, seed: int
) -> RecordedLookup | None:
    """``--supply replay``'s lookup: in ``--replay-from``'s episodes, else in expert episodes of the train split."""
    if supply != "replay":
        return None
    from dreamgym_env.bench.sampling import GROUNDING_EPISODES, grounding_buffer, replay_lookup
    from dreamgym_env.replay.buffer import ExperienceReplayBuffer

    if replay_from is None:
        return replay_lookup(grounding_buffer(pack, GROUNDING_EPISODES, "structured", seed))
    buffer = ExperienceReplayBuffer(None)
    if not buffer.load_jsonl(replay_from, source="offline"):
        raise ConfigurationError(f"{replay_from} holds no trajectory to look transitions up in")
    return replay_lookup(buffer)


def _supply(text: str | None, *, recorded: bool) -> Supply:
    """``--supply``, or its default: ``none`` for recorded steps (a domain known from its recordings), else ``pack``."""
    if text is None:
        return "none" if recorded else "pack"
    if text not in SUPPLIES:
        raise ConfigurationError(f"--supply takes one of {', '.join(SUPPLIES)}; got {text!r}")
    return cast("Supply", text)
