"""Seconds per transition of the embedded local model: text and structured mode, single and batched.

Usage: python benchmarks/local_model.py [--episodes 2] [--steps 2] [--batch 4]
       [--configs text4,structured4,structured0,whole4] [--preset qwen-0.5b]

Plays expert episodes of the WebShop reference env (test split) and asks the local model for
their first ``--steps`` steps, from the real states, grounded as in the demo: 4 demonstrations
from a replay buffer of 40 expert episodes (training split) recorded in the same state mode.
Four configurations: text mode with 4 demonstrations (the demo's setting), structured mode (the
domain's abstract state as JSON; ALFWorld where WebShop has no state schema) with 4
demonstrations and without, and ``whole4``: structured with 4 demonstrations where the model
writes the whole state (no carried fields, as before they existed). Each runs the steps of
``--episodes`` episodes one request at a time, episode after episode ("single", as one env), and the steps of ``--batch`` other episodes as
one batch a step ("N=4": one ``predict`` call holding step k of every episode, as a vector env's
step; the model's slots decode them together).

Every slot is primed with the mode's system prompt first (:meth:`LocalExperienceModel.prime`),
so the rows show the steady state of a long run, where that static prefix is always in the KV
cache. Columns: seconds per transition (wall time / transitions; for a batch, its wall time
shared among its transitions), aggregate transitions per second, each request's own latency,
and per request the prompt tokens sent, those evaluated (sent minus those reused from the KV
cache) and the completion tokens. The load average matters: llama.cpp's threads slow down
sharply when other jobs share the cores. ``calls`` is the mean number of model calls a
transition took (above 1: answers re-asked); tokens and latency add up over them; ``failed``
counts answers still unusable after the re-asks (their time counts, their tokens do not).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from dataclasses import dataclass

from dreamgym_env.agents.expert import expert_policy
from dreamgym_env.agents.rollouts import StateMode, collect_trajectories
from dreamgym_env.domain import Domain
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.errors import ModelOutputError
from dreamgym_env.experience.local import LocalExperienceModel
from dreamgym_env.replay.buffer import ExperienceReplayBuffer
from dreamgym_env.replay.grounding import ReplayGrounder
from dreamgym_env.types import ExperienceRequest, Transition

TRAIN_EPISODES = 40


@dataclass
class Row:
    config: str
    batching: str
    transitions: int
    wall_s: float
    latencies: list[float]
    sent: list[int]
    evaluated: list[int]
    completion: list[int]
    attempts: list[int]
    load: float
    failed: int

    @classmethod
    def of(
        cls, config: str, batching: str, results: list[Transition | BaseException], wall_s: float, load: float
    ) -> Row:
        """A row of ``results``: a failed answer counts in the time per transition, not in the token means."""
        usages = [t.usage for t in results if isinstance(t, Transition)]
        return cls(
            config,
            batching,
            len(results),
            wall_s,
            [u.latency_s for u in usages],
            [u.prompt_tokens for u in usages],
            [u.prompt_tokens - u.cached_prompt_tokens for u in usages],
            [u.completion_tokens for u in usages],
            [u.attempts for u in usages],
            load,
            len(results) - len(usages),
        )

    def line(self) -> str:
        return (
            f"{self.config:28} {self.batching:7} {self.transitions:3d} {self.wall_s / self.transitions:9.1f} "
            f"{self.transitions / self.wall_s:8.3f} {statistics.fmean(self.latencies):8.1f} "
            f"{statistics.fmean(self.sent):6.0f} {statistics.fmean(self.evaluated):6.0f} "
            f"{statistics.fmean(self.completion):6.0f} {statistics.fmean(self.attempts):5.2f} {self.load:5.1f}"
            f" {self.failed:6d}"
        )


HEADER = (
    f"{'configuration':28} {'batch':7} {'n':>3} {'s/trans':>9} {'trans/s':>8} {'latency':>8} "
    f"{'sent':>6} {'evald':>6} {'output':>6} {'calls':>5} {'load':>5} {'failed':>6}"
)


def structured_domain() -> Domain:
    """WebShop where its state schema exists, else ALFWorld."""
    webshop = get_domain("webshop")
    return webshop if webshop.state_schema is not None else get_domain("alfworld")


def requests_for(
    pack: Domain, mode: StateMode, demos: int, episodes: int, steps: int, carry: bool = True
) -> list[list[ExperienceRequest]]:
    """The requests of the first ``steps`` steps of expert test episodes (a list an episode), with ``demos`` demonstrations.

    ``carry``: structured requests name the domain's carried fields (as the synthetic env's do);
    False asks the model for the whole state, as before carried fields existed.
    """
    reference = pack.make_reference_env(split="test", max_steps=pack.max_episode_steps)
    played = collect_trajectories(
        reference, expert_policy(pack), episodes, seed=1, progress=False, state_mode=mode
    )
    schema = pack.state_json_schema if mode == "structured" else None
    requests = [
        [
            ExperienceRequest(
                prompt=pack.prompt,
                state_schema=schema,
                **(pack.answer_fields(step.state, step.action) if schema and carry else {}),
                task=t.task,
                state=step.state,
                action=step.action,
            )
            for step in t.steps[:steps]
        ]
        for t in played
    ]
    if not demos:
        return requests
    train = pack.make_reference_env(split="train", max_steps=pack.max_episode_steps)
    buffer = ExperienceReplayBuffer(None, embedder="hashed")
    try:
        for trajectory in collect_trajectories(
            train, expert_policy(pack), TRAIN_EPISODES, seed=0, progress=False, state_mode=mode
        ):
            buffer.add_trajectory(trajectory, source="offline")
        grounder = ReplayGrounder(buffer, k=demos, write_back=False)
        return [
            [r.model_copy(update={"demonstrations": grounder.demonstrations(r)}) for r in episode]
            for episode in requests
        ]
    finally:
        buffer.close()


async def each_or_error(
    model: LocalExperienceModel, requests: list[ExperienceRequest]
) -> list[list[Transition] | BaseException]:
    """The requests answered together (the slots decode them as one batch), each failure kept in its place."""
    return await asyncio.gather(*(model.predict([r]) for r in requests), return_exceptions=True)


def measure(
    model: LocalExperienceModel, config: str, episodes: list[list[ExperienceRequest]], single: int, batch: int
) -> tuple[Row, Row]:
    """The first ``single`` episodes one request at a time, the next ``batch`` as one batch a step.

    An answer that fails (re-asked, then :class:`ModelOutputError`) is counted, not raised: the
    other requests of its batch go on.
    """
    load, started = os.getloadavg()[0], time.perf_counter()
    results: list[Transition | BaseException] = []
    for episode in episodes[:single]:
        for request in episode:
            try:
                results.append(model.predict_one(request))
            except ModelOutputError as exc:
                results.append(exc)
    single_row = Row.of(config, "single", results, time.perf_counter() - started, load)
    print(single_row.line(), flush=True)
    load, results, started = os.getloadavg()[0], [], time.perf_counter()
    vector = episodes[single : single + batch]
    for step in range(max(len(episode) for episode in vector)):
        batch_requests = [episode[step] for episode in vector if step < len(episode)]
        answers = model.run(each_or_error(model, batch_requests))
        for answer in answers:
            if isinstance(answer, BaseException) and not isinstance(answer, ModelOutputError):
                raise answer
            results.append(answer if isinstance(answer, BaseException) else answer[0])
    batch_row = Row.of(config, f"N={batch}", results, time.perf_counter() - started, load)
    print(batch_row.line(), flush=True)
    return single_row, batch_row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=2, help="episodes played one request at a time")
    parser.add_argument(
        "--batch", type=int, default=4, help="episodes played as one batch a step (and slots)"
    )
    parser.add_argument("--steps", type=int, default=2, help="first steps of each episode to predict")
    parser.add_argument(
        "--baseline-s",
        type=float,
        default=23.6,
        help="seconds per transition to compare with (text, 4 demos, before KV reuse and slots)",
    )
    parser.add_argument(
        "--configs",
        default="text4,structured4,structured0",
        help="comma-separated: text4 (text, 4 demos), structured4, structured0 (structured, no demos), "
        "whole4 (structured, 4 demos, the model writes the whole state: no carried fields)",
    )
    parser.add_argument(
        "--preset", default=None, help="model preset (default: DREAMGYM_LOCAL_MODEL_PRESET or qwen-0.5b)"
    )
    args = parser.parse_args()

    webshop, structured = get_domain("webshop"), structured_domain()
    count = args.episodes + args.batch
    known: dict[str, tuple[str, Domain, StateMode, int, bool]] = {
        "text4": (f"{webshop.name} text, 4 demos", webshop, "text", 4, True),
        "structured4": (f"{structured.name} structured, 4 demos", structured, "structured", 4, True),
        "structured0": (f"{structured.name} structured, 0 demos", structured, "structured", 0, True),
        "whole4": (f"{structured.name} whole state, 4 demos", structured, "structured", 4, False),
    }
    configs = [known[name.strip()] for name in args.configs.split(",")]
    model = LocalExperienceModel(preset=args.preset, n_parallel=args.batch)
    started = time.perf_counter()
    model.load()
    print(
        f"model {model.model_id}, {model.settings.n_threads} threads, {model.settings.n_parallel} slots "
        f"of {model.settings.n_ctx} tokens, load {time.perf_counter() - started:.1f} s, "
        f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}"
    )
    print(HEADER)
    rows: list[Row] = []
    run_started = time.perf_counter()
    try:
        primed: set[tuple[str, str]] = set()
        for config, pack, mode, demos, carry in configs:
            requests = requests_for(pack, mode, demos, count, args.steps, carry)
            if (pack.name, mode) not in primed:
                model.prime(pack.prompt, requests[0][0].state_schema)
                primed.add((pack.name, mode))
            rows.extend(measure(model, config, requests, args.episodes, args.batch))
    finally:
        model.close()
    print(f"run {time.perf_counter() - run_started:.0f} s, load average at the end {os.getloadavg()[0]:.1f}")
    first = rows[0].wall_s / rows[0].transitions
    for row in rows:
        per = row.wall_s / row.transitions
        print(
            f"{row.config}, {row.batching}: {first / per:.2f}x the speed per transition of "
            f"{rows[0].config}, single; {args.baseline_s / per:.2f}x the {args.baseline_s} s baseline"
        )
    for single, batched in zip(rows[0::2], rows[1::2], strict=True):
        print(
            f"{single.config}: N={args.batch} aggregate {batched.transitions / batched.wall_s:.3f} transitions/s vs "
            f"single {single.transitions / single.wall_s:.3f} "
            f"({(batched.transitions / batched.wall_s) / (single.transitions / single.wall_s):.2f}x)"
        )


if __name__ == "__main__":
    main()
