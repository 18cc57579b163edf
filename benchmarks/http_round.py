"""The floor of a vector step over HTTP: N concurrent POSTs of plain aiohttp to the test server.

No env, no transport, no parsing: the time a round of N requests takes against the 100 ms test
server of ``benchmarks/env_overhead.py`` (its own process) is what any client in one process
can reach on this machine; ``env_overhead.py``'s HTTP ratio is measured against the same server.

Run: python benchmarks/http_round.py [--n 64] [--rounds 8] [--latency 0.1] [--prompt-chars 3000]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

import aiohttp
from env_overhead import server_process


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=64, help="concurrent requests a round")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--latency", type=float, default=0.1, help="the server's latency in seconds")
    parser.add_argument("--prompt-chars", type=int, default=3000)
    args = parser.parse_args()
    with server_process(args.latency) as url:
        times = asyncio.run(rounds(url, args.n, args.rounds, args.prompt_chars))
    median = statistics.median(times)
    print(
        f"N={args.n}: {median * 1e3:.0f} ms a round (median of {args.rounds}; min {min(times) * 1e3:.0f}, "
        f"max {max(times) * 1e3:.0f}); ratio to the ideal {args.latency / median:.2f}"
    )


if __name__ == "__main__":
    main()
