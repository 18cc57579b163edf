"""Requests per second of one process through the endpoint transport: the ``openai`` client vs direct paths.

Every path runs the package's :class:`~dreamgym_env.experience.transport.EndpointTransport` (the
same concurrency limit, endpoint choice, retries, deadline, error mapping and response check by
:func:`~dreamgym_env.experience.transport.chat_reply`); only the HTTP exchange differs:

- ``openai``: the ``openai`` client's raw ``post`` (the package's path until 2026-12-01), its
  errors mapped to the ones the transport reads;
- ``httpx``: a direct ``httpx.AsyncClient`` (the library under the ``openai`` client);
- ``aiohttp``: the package's path now (an ``aiohttp.ClientSession``).

The server is a minimal asyncio HTTP/1.1 server in its own process that answers every request
at once (0 ms) with the same transition, so that the client's CPU is what is measured. Reported:
requests per second of wall time, and of the client process's CPU time (``time.process_time``,
the per-request cost, robust to other load on the machine).

Run: python benchmarks/http_path.py [--requests 4000] [--concurrency 64,256] [--paths openai,httpx,aiohttp]
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import aiohttp
import httpx
import openai
from rich.console import Console
from rich.table import Table

from dreamgym_env.envs.registry import get_domain
from dreamgym_env.experience.config import EndpointConfig
from dreamgym_env.experience.endpoints import Endpoint
from dreamgym_env.experience.prompt import messages, transition_schema
from dreamgym_env.experience.transport import EndpointTransport, HTTPStatusError
from dreamgym_env.types import ExperienceRequest

CONNECTIONS_PER_CLIENT = 32
"""The old path's clients held this many connections each: httpx's pool scans all its connections
for every request, so one pool of 256 connections cost seconds a batch."""

FAST_SERVER = r"""
import asyncio, json
ANSWER = json.dumps({"reasoning": "the search opens results", "next_state": "WebShop [Search] results",
                     "reward": 0, "done": False})
BODY = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "bench",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": ANSWER}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 900, "completion_tokens": 40, "total_tokens": 940}}).encode()
RESPONSE = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
            + str(len(BODY)).encode() + b"\r\n\r\n" + BODY)

class Answer(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport, self.buffer = transport, b""

    def data_received(self, data):
        self.buffer += data
        while (end := self.buffer.find(b"\r\n\r\n")) >= 0:
            length = 0
            for line in self.buffer[:end].split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            if len(self.buffer) < end + 4 + length:
                return
            self.buffer = self.buffer[end + 4 + length:]
            self.transport.write(RESPONSE)

async def main():
    server = await asyncio.get_running_loop().create_server(Answer, "127.0.0.1", 0, backlog=2048)
    print(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1", flush=True)
    await asyncio.Event().wait()

asyncio.run(main())
"""


@contextmanager
def fast_server() -> Iterator[str]:
    """The 0 ms server in its own process; yields its base URL."""
    proc = subprocess.Popen([sys.executable, "-c", FAST_SERVER], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().strip()
    finally:
        proc.kill()
        proc.wait()


class OpenAIClientTransport(EndpointTransport):
    """The transport with the ``openai`` client's raw ``post`` as its HTTP exchange (the old path).

    As until 2026-12-01: a client per 32 concurrent calls (httpx's pool scans its connections for
    every request), the typed-params transform skipped (``cast_to=str``), the attempt's timeout by
    ``asyncio.wait_for``. Errors become the ones :func:`translate_error` maps.
    """

    def __init__(self, config: EndpointConfig) -> None:
        super().__init__(config)
        self._clients: dict[Any, list[openai.AsyncOpenAI]] = {}
        self._turn = 0

    async def _post(
        self, session: Any, endpoint: Endpoint, body: dict[str, Any], timeout: float | None
    ) -> str:
        loop = asyncio.get_running_loop()
        clients = self._clients.get((loop, endpoint))
        if clients is None:
            shards = -(-self.config.max_concurrency // CONNECTIONS_PER_CLIENT)
            clients = self._clients[(loop, endpoint)] = [
                openai.AsyncOpenAI(
                    base_url=endpoint.url, api_key=self.config.api_key.get_secret_value(), max_retries=0
                )
                for _ in range(shards)
            ]
        self._turn += 1
        call = clients[self._turn % len(clients)].post("/chat/completions", body=body, cast_to=str)
        try:
            return await (call if timeout is None else asyncio.wait_for(call, timeout))
        except openai.APITimeoutError:
            raise TimeoutError("the request timed out") from None
        except openai.APIStatusError as exc:
            raise HTTPStatusError(exc.status_code, exc.message, exc.response.headers) from None
        except openai.APIConnectionError as exc:
            raise aiohttp.ClientConnectionError(str(exc.__cause__ or exc)) from None

    async def aclose(self) -> None:
        clients = [
            c for (loop, _), cs in self._clients.items() if loop is asyncio.get_running_loop() for c in cs
        ]
        await asyncio.gather(*(client.close() for client in clients))
        await super().aclose()


class HttpxTransport(EndpointTransport):
    """The transport with a direct ``httpx.AsyncClient`` as its HTTP exchange (32 connections a client)."""

    def __init__(self, config: EndpointConfig) -> None:
        super().__init__(config)
        self._clients: dict[Any, list[httpx.AsyncClient]] = {}
        self._turn = 0

    async def _post(
        self, session: Any, endpoint: Endpoint, body: dict[str, Any], timeout: float | None
    ) -> str:
        loop = asyncio.get_running_loop()
        clients = self._clients.get((loop, endpoint))
        if clients is None:
            shards = -(-self.config.max_concurrency // CONNECTIONS_PER_CLIENT)
            limits = httpx.Limits(max_connections=CONNECTIONS_PER_CLIENT)
            clients = self._clients[(loop, endpoint)] = [
                httpx.AsyncClient(base_url=endpoint.url, limits=limits) for _ in range(shards)
            ]
        self._turn += 1
        route = self._routes[endpoint]
        try:
            response = await clients[self._turn % len(clients)].post(
                "/chat/completions", json=body, headers=dict(route.headers), timeout=timeout
            )
        except httpx.TimeoutException:
            raise TimeoutError("the request timed out") from None
        except httpx.TransportError as exc:
            raise aiohttp.ClientConnectionError(str(exc)) from None
        if response.status_code >= 400:
            raise HTTPStatusError.of(response.status_code, response.content, response.headers)
        return response.text

    async def aclose(self) -> None:
        clients = [
            c for (loop, _), cs in self._clients.items() if loop is asyncio.get_running_loop() for c in cs
        ]
        await asyncio.gather(*(client.aclose() for client in clients))
        await super().aclose()


PATHS: dict[str, type[EndpointTransport]] = {
    "openai": OpenAIClientTransport,
    "httpx": HttpxTransport,
    "aiohttp": EndpointTransport,
}


def webshop_messages() -> list[dict[str, str]]:
    """The messages of a real WebShop request (about 5 KB): the body the hot path sends."""
    domain = get_domain("webshop")
    task = domain.tasks("train")[0]
    request = ExperienceRequest(
        prompt=domain.prompt, task=task, state=task.initial_state, action="search[shirt]"
    )
    return messages(domain.prompt, request)


async def measure(path: str, url: str, requests: int, concurrency: int) -> tuple[float, float]:
    """(wall requests/s, requests per CPU second of this process) of ``requests`` calls, ``concurrency`` at once."""
    config = EndpointConfig(base_url=url, model="bench", api_key=None, max_concurrency=concurrency)
    transport = PATHS[path](config)
    conversation, schema = webshop_messages(), transition_schema(None)

    async def one() -> None:
        reply = await transport.complete(conversation, schema=schema, schema_name="transition")
        assert reply.text and reply.finish_reason == "stop"

    async def batch(n: int) -> None:
        await asyncio.gather(*(one() for _ in range(n)))

    try:
        await batch(2 * concurrency)  # connections opened, code warm
        cpu, wall = time.process_time(), time.perf_counter()
        await batch(requests)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    finally:
        await transport.aclose()
    counts = transport.counts()[url]
    assert counts.failures == 0 and counts.requests == requests + 2 * concurrency
    return requests / wall, requests / cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=4000, help="timed requests per measurement")
    parser.add_argument("--concurrency", default="64,256", help="requests in flight at once")
    parser.add_argument("--paths", default=",".join(PATHS), help=f"paths to measure, of {sorted(PATHS)}")
    parser.add_argument("--repeats", type=int, default=3, help="measurements per cell (the best is kept)")
    args = parser.parse_args()
    console = Console()
    paths = args.paths.split(",")
    table = Table(
        title=f"Requests per second of one process, 0 ms server, {args.requests} requests (best of {args.repeats})"
    )
    for column in (
        "path",
        "in flight",
        "req/s (wall)",
        "req/s per CPU s",
        "CPU ms/request",
        "vs openai (wall)",
        "vs openai (CPU)",
    ):
        table.add_column(column)
    with fast_server() as url:
        for concurrency in (int(c) for c in args.concurrency.split(",")):
            results: dict[str, tuple[float, float]] = {}
            for path in paths:
                runs = [
                    asyncio.run(measure(path, url, args.requests, concurrency)) for _ in range(args.repeats)
                ]
                results[path] = (max(r[0] for r in runs), max(r[1] for r in runs))
                console.print(f"{path} at {concurrency}: {results[path][0]:.0f} req/s", style="dim")
            base = results.get("openai")
            for path, (wall, cpu) in results.items():
                ratios = [f"{wall / base[0]:.2f}x", f"{cpu / base[1]:.2f}x"] if base else ["-", "-"]
                table.add_row(
                    path, str(concurrency), f"{wall:.0f}", f"{cpu:.0f}", f"{1e3 / cpu:.3f}", *ratios
                )
    console.print(table)


if __name__ == "__main__":
    main()
