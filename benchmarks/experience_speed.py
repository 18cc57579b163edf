"""Transitions per second of an experience model against its fidelity, over held-out transitions.

Usage: python benchmarks/experience_speed.py --domain D --model M [--num-envs 16] [--n 100]
       [--seed 0] [--json runs/experience-speed/D-M.json]

``--model`` is any name the envs take (``local``: the pack's default; ``local:base``;
``local:<trained or distilled dir>``; ``endpoint:URL``), see docs/experience-models.md. The
held-out transitions are drawn as ``dreamgym experience eval`` draws them (test tasks; a third
each expert, noisy, random; structured states) and asked ``--num-envs`` at a time, one
``predict`` call each, as a vector env of that many sub-envs steps (the local model runs that
many slots). The model is loaded and, for a model that reads a system prompt, every slot
primed before the clock starts: the rows are a long run's steady state. Fidelity is the
held-out fidelity report (:func:`dreamgym_env.bench.fidelity.measure_fidelity`). The clock runs only
while the model is asked (scoring the answers is not the model's time): a batch with an answer
still unusable after its re-asks raises, and the scorer then asks each of its requests alone,
as a caller retrying a vector step would; that time counts.

The last line is always::

    transitions_per_s X reward_agreement Y done_agreement Z valid W

followed by nothing, so that a script can read it.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dreamgym_env.bench.fidelity import measure_fidelity
from dreamgym_env.bench.sampling import sample_transitions
from dreamgym_env.envs.models import experience_model_for
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.experience.base import ExperienceModel
from dreamgym_env.experience.local import LocalExperienceModel
from dreamgym_env.types import ExperienceRequest, Transition


class TimedModel:
    """The calls the scorer makes of a model, timed: ``seconds`` of asking, ``failed_batches``."""

    def __init__(self, model: ExperienceModel) -> None:
        self.model, self.seconds, self.failed_batches = model, 0.0, 0

    def predict_sync(self, requests: Sequence[ExperienceRequest]) -> list[Transition]:
        started = time.perf_counter()
        try:
            return list(self.model.predict_sync(requests))
        except Exception:
            self.failed_batches += 1
            raise
        finally:
            self.seconds += time.perf_counter() - started

    def predict_one(self, request: ExperienceRequest) -> Transition:
        started = time.perf_counter()
        try:
            return self.model.predict_one(request)
        finally:
            self.seconds += time.perf_counter() - started

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--domain", required=True)
    parser.add_argument("--model", default="local")
    parser.add_argument("--num-envs", type=int, default=16)
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None, help="also write the report here")
    args = parser.parse_args()
    pack = get_domain(args.domain)
    transitions = [s.reference for s in sample_transitions(pack, args.n, seed=args.seed)]
    model = experience_model_for(pack, args.model, {"n_parallel": args.num_envs})
    try:
        if isinstance(model, LocalExperienceModel):
            model.load()
            request = transitions[0].request
            model.prime(request.prompt, request.state_schema)
        timed = TimedModel(model)
        report = measure_fidelity(timed, transitions, domain=pack, batch_size=args.num_envs)  # type: ignore[arg-type]
        seconds = timed.seconds
    finally:
        model.close()
    rate = len(transitions) / seconds
    print(report)
    print(
        f"{args.model} on {len(transitions)} held-out {pack.name} transitions, {args.num_envs} at a time: "
        f"{seconds:.1f} s asking the model, {timed.failed_batches} batches retried one by one; always-0 reward {report.always_zero_reward:.3f}, never-done {report.always_zero_done:.3f}, "
        f"state kind {report.kind_agreement}"
    )
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        payload = {
            "domain": pack.name,
            "model": args.model,
            "num_envs": args.num_envs,
            "n": len(transitions),
            "seed": args.seed,
            "seconds": round(seconds, 2),
            "failed_batches": timed.failed_batches,
            "transitions_per_s": round(rate, 3),
            "report": report.to_dict(),
        }
        args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    print(
        f"transitions_per_s {rate:.2f} reward_agreement {report.reward_agreement:.3f} "
        f"done_agreement {report.done_agreement:.3f} valid {report.valid:.3f}"
    )


if __name__ == "__main__":
    main()
