"""Fidelity of an experience model in text and structured mode, grounded and not, on reference transitions.

Samples transitions of a domain's reference env (test split; expert, noisy and random policies
in equal shares; valid actions only), asks the model for each in text mode (pages) and in
structured mode (the domain's abstract state), without demonstrations and with k real
transitions retrieved from a replay buffer of expert episodes on the train split, and prints
the per-field table (``dreamgym_env.bench.fidelity.measure_fidelity``). Both modes answer the
same transitions: the text ones are the structured ones rendered. The sampling and the requests
are ``dreamgym_env.bench.sampling``'s, as ``dreamgym fidelity`` (which adds the reports) uses.

    python benchmarks/fidelity_modes.py --domain webshop --n 100            # the embedded model
    python benchmarks/fidelity_modes.py --domain webshop --n 100 --model oracle --error-rate 0.2
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any, cast

import dreamgym_env  # noqa: F401  (registers the packs)
from dreamgym_env.agents.rollouts import progress_bar
from dreamgym_env.bench.fidelity import FidelityReport, StateMode, score_transitions, summarize
from dreamgym_env.bench.sampling import mode_transitions, replay_grounder, sample_transitions
from dreamgym_env.envs.oracle import OracleExperienceModel
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.experience.base import ExperienceModel


def build_model(args: argparse.Namespace) -> ExperienceModel:
    if args.model == "oracle":
        return OracleExperienceModel(args.domain, error_rate=args.error_rate, seed=args.seed)
    from dreamgym_env.experience.selection import default_experience_model

    return default_experience_model(backend="local" if args.model == "local" else "endpoint")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--domain", default="webshop")
    parser.add_argument("--n", type=int, default=100, help="transitions")
    parser.add_argument("--k", type=int, default=4, help="demonstrations when grounded")
    parser.add_argument("--model", default="local", help="local, endpoint or oracle")
    parser.add_argument("--error-rate", type=float, default=0.0, help="oracle only")
    parser.add_argument("--modes", default="structured,text")
    parser.add_argument("--grounding", default="none,replay")
    parser.add_argument("--history-len", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("runs/fidelity_modes.json"))
    args = parser.parse_args()
    domain = get_domain(args.domain)
    samples = sample_transitions(domain, args.n, seed=args.seed, history_len=args.history_len)
    model = build_model(args)
    load = getattr(getattr(model, "inner", model), "load", None)
    if callable(load):
        load()
    results: dict[str, Any] = {"domain": domain.name, "n": len(samples), "model": repr(model), "runs": {}}
    try:
        for mode in cast("list[StateMode]", args.modes.split(",")):
            for grounding in args.grounding.split(","):
                grounder = (
                    replay_grounder(domain, mode, seed=args.seed, k=args.k) if grounding == "replay" else None
                )
                references = mode_transitions(domain, samples, mode, grounder=grounder)
                started = time.perf_counter()
                with progress_bar(len(references), f"{mode}/{grounding}", unit="tr") as bar:
                    scores = score_transitions(
                        model, references, domain=domain, batch_size=4, progress=bar.update
                    )
                report: FidelityReport = summarize(scores)
                seconds = time.perf_counter() - started
                results["runs"][f"{mode}/{grounding}"] = {**report.to_dict(), "wall_s": round(seconds, 1)}
                print(
                    f"== {mode}, grounding {grounding}: {seconds:.0f} s ({seconds / len(samples):.1f} s a transition)"
                )
                print(report, flush=True)
                args.out.parent.mkdir(parents=True, exist_ok=True)
                args.out.write_text(json.dumps(results, indent=2))
    finally:
        model.close()


if __name__ == "__main__":
    main()
