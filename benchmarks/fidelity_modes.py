"""Fidelity of an experience model in text and structured mode, grounded and not, on reference transitions.

Samples transitions of a domain's reference env (test split; expert, noisy and random policies
in equal shares; valid actions only), asks the model for each in text mode (pages) and in
structured mode (the domain's abstract state), without demonstrations and with k real
transitions retrieved from a replay buffer of expert episodes on the train split, and prints
the per-field table (``dreamgym_env.bench.fidelity.measure_fidelity``). Both modes answer the
same transitions: the text ones are the structured ones rendered.

    python benchmarks/fidelity_modes.py --domain webshop --n 100            # the embedded model
    python benchmarks/fidelity_modes.py --domain webshop --n 100 --model oracle --error-rate 0.2
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

import dreamgym_env  # noqa: F401  (registers the packs)
from dreamgym_env.agents import make_policy
from dreamgym_env.agents.rollouts import collect_trajectories
from dreamgym_env.bench.fidelity import FidelityReport, ReferenceTransition, measure_fidelity
from dreamgym_env.envs.domain import Domain
from dreamgym_env.envs.oracle import OracleExperienceModel
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.experience.base import ExperienceModel
from dreamgym_env.replay.buffer import ExperienceReplayBuffer
from dreamgym_env.replay.grounding import ReplayGrounder
from dreamgym_env.types import ExperienceRequest, Step, Trajectory, Transition

POLICIES = ("expert", "noisy", "random")


def rendered(domain: Domain, state: str) -> str:
    return domain.render_state(domain.parse_state(state))


def as_text(domain: Domain, trajectory: Trajectory) -> Trajectory:
    """The same episode with its abstract states rendered: the text-mode view."""
    steps = [
        step.model_copy(
            update={"state": rendered(domain, step.state), "next_state": rendered(domain, step.next_state)}
        )
        for step in trajectory.steps
    ]
    return trajectory.model_copy(
        update={"steps": steps, "metadata": {**trajectory.metadata, "state_mode": "text"}}
    )


def sample(domain: Domain, n: int, seed: int, history_len: int) -> list[tuple[ExperienceRequest, Transition]]:
    """``n`` structured (request, truth) pairs from test episodes of the three policies."""
    env = domain.make_reference_env(split="test", max_steps=domain.max_episode_steps)
    rng = np.random.default_rng(seed)
    chosen: list[tuple[ExperienceRequest, Transition]] = []
    for index, name in enumerate(POLICIES):
        policy = make_policy(name, domain, seed=seed + index)
        episodes = collect_trajectories(
            env,
            policy,
            max(4, n // 3),
            seed=seed + 100 * index,
            policy_name=name,
            progress=False,
            state_mode="structured",
        )
        pool: list[tuple[ExperienceRequest, Transition]] = []
        for trajectory in episodes:
            past: list[Step] = []
            for step in trajectory.steps:
                if step.action_valid:
                    request = ExperienceRequest(
                        prompt=domain.prompt,
                        state_schema=domain.state_json_schema,
                        task=trajectory.task,
                        history=past[-history_len:],
                        state=step.state,
                        action=step.action,
                    )
                    pool.append(
                        (
                            request,
                            Transition(next_state=step.next_state, reward=step.reward, terminated=step.done),
                        )
                    )
                past.append(step)
        share = n // len(POLICIES) + (1 if index < n % len(POLICIES) else 0)
        picks = rng.choice(len(pool), size=min(share, len(pool)), replace=False)
        chosen += [pool[int(i)] for i in sorted(picks)]
    env.close()
    return chosen


def text_request(domain: Domain, request: ExperienceRequest) -> ExperienceRequest:
    history = [
        step.model_copy(
            update={"state": rendered(domain, step.state), "next_state": rendered(domain, step.next_state)}
        )
        for step in request.history
    ]
    return request.model_copy(
        update={"state_schema": None, "state": rendered(domain, request.state), "history": history}
    )


def grounding_buffer(domain: Domain, episodes: int, mode: str, seed: int) -> ExperienceReplayBuffer:
    env = domain.make_reference_env(split="train", max_steps=domain.max_episode_steps)
    trajectories = collect_trajectories(
        env,
        make_policy("expert", domain),
        episodes,
        seed=seed,
        policy_name="expert",
        progress=False,
        state_mode="structured",
    )
    env.close()
    buffer = ExperienceReplayBuffer(None)
    for trajectory in trajectories:
        buffer.add_trajectory(
            trajectory if mode == "structured" else as_text(domain, trajectory), source="offline"
        )
    return buffer


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
    pairs = sample(domain, args.n, args.seed, args.history_len)
    model = build_model(args)
    load = getattr(getattr(model, "inner", model), "load", None)
    if callable(load):
        load()
    results: dict[str, Any] = {"domain": domain.name, "n": len(pairs), "model": repr(model), "runs": {}}
    try:
        for mode in args.modes.split(","):
            for grounding in args.grounding.split(","):
                requests = [r if mode == "structured" else text_request(domain, r) for r, _ in pairs]
                if grounding == "replay":
                    grounder = ReplayGrounder(
                        grounding_buffer(domain, 40, mode, args.seed),
                        k=args.k,
                        write_back=False,
                        state_chars=None if mode == "structured" else 160,
                        next_state_chars=None if mode == "structured" else 160,
                    )
                    requests = [
                        r.model_copy(update={"demonstrations": grounder.demonstrations(r)}) for r in requests
                    ]
                truths = [
                    t
                    if mode == "structured"
                    else t.model_copy(update={"next_state": rendered(domain, t.next_state)})
                    for _, t in pairs
                ]
                references = [ReferenceTransition(r, t) for r, t in zip(requests, truths, strict=True)]
                started = time.perf_counter()
                report: FidelityReport = measure_fidelity(model, references, domain=domain, batch_size=4)
                seconds = time.perf_counter() - started
                results["runs"][f"{mode}/{grounding}"] = {**report.to_dict(), "wall_s": round(seconds, 1)}
                print(
                    f"== {mode}, grounding {grounding}: {seconds:.0f} s ({seconds / len(pairs):.1f} s a transition)"
                )
                print(report, flush=True)
                args.out.parent.mkdir(parents=True, exist_ok=True)
                args.out.write_text(json.dumps(results, indent=2))
    finally:
        model.close()


if __name__ == "__main__":
    main()
