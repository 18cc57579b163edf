"""The floor of a vector step over HTTP: N concurrent POSTs of plain aiohttp to the test server.

No env, no transport, no parsing: the time a round of N requests takes against the 100 ms test
server of ``benchmarks/env_overhead.py`` (its own process) is what any client in one process
can reach on this machine. In the same run, against the same server, the package's round: one
``DreamVectorEnv`` step of N sub-envs over the endpoint backend (prompt, transport, parsing,
bookkeeping), and the ratio of the two medians.

Run: python benchmarks/http_round.py [--n 64] [--rounds 8] [--latency 0.1] [--prompt-chars 3000]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

import aiohttp
from env_overhead import server_process

from dreamgym_env.envs.vector import DreamVectorEnv
from dreamgym_env.experience.openai_backend import OpenAIExperienceModel


async def rounds(url: str, n: int, count: int, prompt_chars: int) -> list[float]:
    """Seconds of each of ``count`` rounds of ``n`` concurrent chat requests (after one warm-up round)."""
    body = {"model": "bench", "messages": [{"role": "user", "content": "x" * prompt_chars}], "max_tokens": 16}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=4 * n)) as session:

        async def one() -> bytes:
            async with session.post(f"{url}/chat/completions", json=body) as response:
                return await response.read()

        times = []
        for _ in range(count + 1):
            started = time.perf_counter()
            await asyncio.gather(*(one() for _ in range(n)))
            times.append(time.perf_counter() - started)
        return times[1:]


def package_rounds(url: str, n: int, count: int) -> list[float]:
    """Seconds of each of ``count`` vector steps of ``n`` sub-envs over the endpoint backend (after a warm-up)."""
    model = OpenAIExperienceModel(base_url=url, model="bench", max_concurrency=4 * n)
    envs = DreamVectorEnv(n, "webshop", model)
    try:
        times = []
        for _ in range(count + 1):
            envs.reset(seed=0)
            started = time.perf_counter()
            _, _, _, _, infos = envs.step(["search[long sleeve shirt]"] * n)
            times.append(time.perf_counter() - started)
            assert all(infos["action_valid"]), "every timed step must reach the model"
        return times[1:]
    finally:
        envs.close()
        model.close()


def describe(name: str, times: list[float], latency: float) -> str:
    median = statistics.median(times)
    return (
        f"{name}: {median * 1e3:.0f} ms a round (median of {len(times)}; min {min(times) * 1e3:.0f}, "
        f"max {max(times) * 1e3:.0f}); ratio to the ideal {latency / median:.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=64, help="concurrent requests a round")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--latency", type=float, default=0.1, help="the server's latency in seconds")
    parser.add_argument("--prompt-chars", type=int, default=3000)
    args = parser.parse_args()
    with server_process(args.latency) as url:
        plain = asyncio.run(rounds(url, args.n, args.rounds, args.prompt_chars))
        package = package_rounds(url, args.n, args.rounds)
    print(f"N={args.n}")
    print(describe("plain aiohttp", plain, args.latency))
    print(describe("package (DreamVectorEnv step, endpoint backend)", package, args.latency))
    print(f"package / plain aiohttp: {statistics.median(package) / statistics.median(plain):.2f}")


if __name__ == "__main__":
    main()
