"""Where the embedded model's time goes: reading the prompt vs writing the answer, 1 vs 4 slots, grammar or not.

Sends the structured requests of a few WebShop reference transitions to the embedded runtime
(no re-asks, no parsing): each configuration twice, the first to fill the slots' KV caches, the
second timed, so the timed run writes ``--max-tokens`` tokens a request and reads almost none.
Prompt reading is timed on the first call of the run (nothing cached yet).

    python benchmarks/local_decode.py                 # about 2 minutes on 2 cores
"""

from __future__ import annotations

import argparse
import threading
import time
from typing import Any

import dreamgym_env  # noqa: F401  (registers the packs)
from dreamgym_env.bench.sampling import mode_transitions, sample_transitions
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.experience.local import LocalSettings, XllamacppRuntime, grammar_schema
from dreamgym_env.experience.prompt import answer_state_schema, messages, transition_schema
from dreamgym_env.experience.provision import model_file


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--domain", default="webshop")
    parser.add_argument("--max-tokens", type=int, default=120)
    args = parser.parse_args()
    domain = get_domain(args.domain)
    requests = [
        r.request
        for r in mode_transitions(domain, sample_transitions(domain, 4, seed=0), "structured", grounder=None)
    ]
    path, _ = model_file()
    runtime = XllamacppRuntime(path, LocalSettings())

    def body(index: int, constrained: bool) -> dict[str, Any]:
        request = requests[index]
        sent: dict[str, Any] = {
            "messages": messages(request.prompt, request),
            "temperature": 0.0,
            "max_tokens": args.max_tokens,
            "seed": 0,
        }
        if constrained:
            schema = grammar_schema(transition_schema(answer_state_schema(request)))
            sent["response_format"] = {"type": "json_object", "schema": schema}
        return sent

    def run(slots: int, constrained: bool) -> tuple[float, list[dict[str, Any]]]:
        answers: list[dict[str, Any]] = [{}] * slots

        def ask(index: int) -> None:
            answers[index] = runtime.chat(body(index, constrained), lambda: False)

        threads = [threading.Thread(target=ask, args=(i,)) for i in range(slots)]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return time.perf_counter() - started, answers

    try:
        _, (first,) = run(1, False)
        timings = first.get("timings") or {}
        print(
            f"prompt reading: {timings.get('prompt_n', 0)} tokens in {timings.get('prompt_ms', 0) / 1000:.1f} s "
            f"({timings.get('prompt_per_second', 0):.0f} tokens/s)"
        )
        for constrained in (False, True):
            for slots in (1, 4):
                run(slots, constrained)  # fills the slots' caches with these prompts
                wall, answers = run(slots, constrained)
                written = sum((a.get("timings") or {}).get("predicted_n", 0) for a in answers)
                read = sum((a.get("timings") or {}).get("prompt_n", 0) for a in answers)
                label = "schema grammar" if constrained else "free"
                print(
                    f"{label:15s} {slots} slot(s): {written} tokens written in {wall:.1f} s "
                    f"({written / wall:.1f} tokens/s in all), {read} prompt tokens read"
                )
    finally:
        runtime.close()


if __name__ == "__main__":
    main()
