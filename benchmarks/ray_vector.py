"""Vector throughput over HTTP: RayVectorEnv (sub-envs split over Ray actors) vs one process.

Both step N synthetic WebShop sub-envs whose model is ``OpenAIExperienceModel`` against the
test server of ``benchmarks/env_overhead.py`` (each request held ``--latency`` s, the server in
its own process). "one process": a ``DreamVectorEnv`` of N sub-envs in this process. "Ray": a
``RayVectorEnv`` of N sub-envs over A actors on a local Ray instance (each actor a process with
its own HTTP client), driven from this process. Ideal: N / latency sub-env steps per second.

Run: python benchmarks/ray_vector.py [--sizes 64,256] [--actors 2] [--latency 0.1] [--vector-steps 10]
"""

from __future__ import annotations

import argparse
import functools
import os
import time

import ray
from env_overhead import server_process, vector_rate
from rich.console import Console
from rich.table import Table

from dreamgym_env.envs.vector import DreamVectorEnv
from dreamgym_env.experience.openai_backend import OpenAIExperienceModel
from dreamgym_env.scale.ray_vector import RayVectorEnv


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="64,256", help="vector sizes N")
    parser.add_argument("--actors", default="2", help="numbers of Ray actors A")
    parser.add_argument("--latency", type=float, default=0.1, help="model latency in seconds")
    parser.add_argument("--vector-steps", type=int, default=10, help="batched steps per measurement")
    args = parser.parse_args()
    console = Console()
    started = time.perf_counter()
    ray.init(include_dashboard=False, log_to_driver=False)
    console.print(
        f"local Ray instance with {ray.cluster_resources().get('CPU', 0):.0f} CPUs, started in "
        f"{time.perf_counter() - started:.1f} s; this machine has {os.cpu_count()} cores"
    )
    actor_counts = [int(a) for a in args.actors.split(",")]
    table = Table(title=f"Vector throughput over HTTP at {args.latency * 1e3:.0f} ms (sub-env steps/s)")
    ray_columns = [f"Ray, {a} actors{r}" for a in actor_counts for r in ("", " ratio")]
    for column in ("N", "ideal", "one process", "ratio", *ray_columns):
        table.add_column(column)
    with server_process(args.latency) as url:
        model = functools.partial(OpenAIExperienceModel, base_url=url, model="bench", max_concurrency=512)
        for n in (int(s) for s in args.sizes.split(",")):
            ideal = n / args.latency
            one = DreamVectorEnv(n, "webshop", model())
            local = vector_rate(one, n, args.vector_steps)
            one.close()
            one.experience_model.close()
            row = [str(n), f"{ideal:.0f}", f"{local:.0f}", f"{local / ideal:.2f}"]
            for actors in actor_counts:
                envs = RayVectorEnv(
                    "DreamGym/WebShop-v0", n, num_actors=actors, experience_model=model, state_mode="text"
                )
                rate = vector_rate(envs, n, args.vector_steps)
                envs.close()
                row += [f"{rate:.0f}", f"{rate / ideal:.2f}"]
            table.add_row(*row)
            console.print("  ".join(row))
    console.print(table)
    ray.shutdown()


if __name__ == "__main__":
    main()
