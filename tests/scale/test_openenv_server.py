"""DreamGym envs served with OpenEnv, stepped by OpenEnv's own client, against the in-process env."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import httpx
import numpy as np
import pytest

pytest.importorskip("openenv", reason="needs the extra `openenv`: pip install 'dreamgym-env[openenv]'")

from openenv import GenericEnvClient
from starlette.websockets import WebSocketDisconnect
from typer.testing import CliRunner
from websockets.exceptions import ConnectionClosed

from dreamgym_env.agents import make_policy
from dreamgym_env.cli import app as cli_app
from dreamgym_env.envs.oracle import OracleExperienceModel
from dreamgym_env.scale.openenv_server import QuietDisconnects, to_jsonable

SYNTHETIC, REFERENCE = "DreamGym/WebShop-v0", "DreamGym/WebShop-Ref-v0"


@pytest.fixture(scope="module")
def server_url(openenv_server) -> Iterator[str]:
    """A server of the synthetic id over the oracle model, in a thread of this process."""
    model = OracleExperienceModel("webshop")
    yield openenv_server(SYNTHETIC, experience_model=model, max_sessions=4)
    model.close()


def without_latency(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_latency(v) for k, v in value.items() if k != "latency_s"}
    if isinstance(value, list):
        return [without_latency(v) for v in value]
    return value


class Pair:
    """One OpenEnv session and the same env in this process, stepped alike and compared."""

    def __init__(self, url: str) -> None:
        self.client = GenericEnvClient(base_url=url).sync()
        self.client.connect()
        self.local = gym.make(SYNTHETIC, experience_model=OracleExperienceModel("webshop"))

    def reset(self, **kwargs: Any) -> tuple[str, dict[str, Any]]:
        result = self.client.reset(**kwargs)
        obs, info = self.local.reset(**kwargs)
        assert result.observation["text"] == obs
        assert result.observation["info"] == to_jsonable(info)
        assert (result.reward, result.done) == (None, False)
        return obs, info

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        result = self.client.step({"action": action})
        obs, reward, terminated, truncated, info = self.local.step(action)
        got = result.observation
        assert got["text"] == obs
        assert result.reward == reward and isinstance(result.reward, float)
        assert (result.done, got["terminated"], got["truncated"]) == (
            terminated or truncated,
            terminated,
            truncated,
        )
        assert without_latency(got["info"]) == without_latency(to_jsonable(info))
        return obs, reward, terminated, truncated, info

    def close(self) -> None:
        self.client.close()
        self.local.close()


def test_openenv_client_sessions_equal_the_in_process_env(server_url):
    """Two sessions at once, interleaved, each step for step equal to its own in-process env."""
    expert, rng = make_policy("expert", "webshop"), np.random.default_rng(0)
    pairs = [Pair(server_url), Pair(server_url)]
    try:
        states = [pair.reset(seed=seed) for pair, seed in zip(pairs, (3, 4), strict=True)]
        assert states[0][1]["task_id"] != states[1][1]["task_id"]
        ends = [0, 0]
        for _ in range(25):
            for k, pair in enumerate(pairs):
                obs, info = states[k]
                action = "not an action" if rng.random() < 0.2 else expert(obs, info)
                obs, _, terminated, truncated, info = pair.step(action)
                states[k] = pair.reset() if terminated or truncated else (obs, info)
                ends[k] += int(terminated or truncated)
        assert min(ends) >= 1
        state = pairs[1].client.state()
        assert state["task_id"] == states[1][1]["task_id"] and state["episode_id"]
        task = pairs[0].local.unwrapped.tasks[7].id
        pairs[0].reset(seed=1, options={"task": task})
        assert pairs[0].client.state()["task_id"] == task
    finally:
        for pair in pairs:
            pair.close()


@pytest.mark.parametrize("action", [5, None, {"click": "buy now"}, ["search[x]"], "x" * 20_000, "jump[high]"])
def test_a_bad_action_gets_the_envs_invalid_action_answer(server_url, action):
    pair = Pair(server_url)
    try:
        pair.reset(seed=0)
        _, reward, terminated, _, info = pair.step(action)  # the same answer as the env's, compared
        assert (reward, terminated, info["action_valid"]) == (0.0, False, False) and info["error"]
        assert pair.client.state()["step_count"] == 1
    finally:
        pair.close()


def test_a_lone_surrogate_is_answered_and_the_step_counted(openenv_server):
    """Issue 30, item 1: the reference env echoes the query; its answer must still encode as JSON."""
    url = openenv_server(REFERENCE, max_sessions=2)
    local = gym.make(REFERENCE)
    try:
        with GenericEnvClient(base_url=url).sync() as client:
            assert client.reset(seed=5).observation["text"] == local.reset(seed=5)[0]
            result = client.step({"action": "search[shoes \ud800]"})  # answered, not a server error
            obs, reward, _, _, info = local.step("search[shoes \ud800]")
            assert (result.observation["text"], result.reward) == (obs, reward)
            assert result.observation["info"] == to_jsonable(info)
            assert 'query "shoes \ufffd"' in result.observation["info"]["state"]
            assert client.state()["step_count"] == 1
    finally:
        local.close()


def test_a_session_beyond_max_sessions_is_closed_with_the_reason(openenv_server):
    """Issue 30, item 5: the refused client learns why (close code 1013 and OpenEnv's message)."""
    url = openenv_server(REFERENCE, max_sessions=1)

    async def refused_session() -> BaseException:
        client = GenericEnvClient(base_url=url)
        await client.connect()  # accepted, then refused at once
        try:
            # Wait for the server's close, so that the reset surely comes after it.
            await asyncio.wait_for(client._ws.wait_closed(), timeout=30)
            with pytest.raises(ConnectionClosed) as closed:
                await client.reset(seed=0)
            return closed.value
        finally:
            await client.close()

    with GenericEnvClient(base_url=url).sync() as first:
        first.reset(seed=0)
        error = asyncio.run(refused_session())
        assert error.rcvd is not None and error.rcvd.code == 1013  # try again later
        assert error.rcvd.reason.startswith("Server at capacity: 1/1 sessions active")
        assert "max_sessions=1" in error.rcvd.reason and "at capacity" in str(error)
        assert first.step({"action": "search[red shoes]"}).observation["info"]["action_valid"]
    with GenericEnvClient(base_url=url).sync() as later:  # the slot is free again
        assert later.reset(seed=0).observation["text"]


def test_a_step_outside_an_episode_is_answered_not_raised(server_url):
    with GenericEnvClient(base_url=server_url).sync() as client:
        result = client.step({"action": "search[shoes]"})
        assert result.done and result.reward == 0.0
        assert "reset first" in result.observation["info"]["error"]
        assert client.reset(seed=0).observation["text"]


def test_a_disconnect_after_the_session_is_not_an_error():
    """OpenEnv closes a socket that the client closed already: that ends the session quietly."""

    async def closes_twice(scope, receive, send):
        raise WebSocketDisconnect(code=1006)

    quiet = QuietDisconnects(closes_twice)
    asyncio.run(quiet({"type": "websocket"}, None, None))
    with pytest.raises(WebSocketDisconnect):  # anywhere else it is not swallowed
        asyncio.run(quiet({"type": "http"}, None, None))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_dreamgym_serve_serves_the_reference_env():
    port = free_port()
    command = [sys.executable, "-c", "from dreamgym_env.cli import main; main()"]
    server = subprocess.Popen(
        [*command, "serve", "--env", REFERENCE, "--port", str(port), "--max-sessions", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "NO_PROXY": "127.0.0.1,localhost"},
    )
    try:
        url, deadline = f"http://127.0.0.1:{port}", time.monotonic() + 60
        while time.monotonic() < deadline and server.poll() is None:
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)
        assert server.poll() is None, server.stdout.read().decode() if server.stdout else ""
        local = gym.make(REFERENCE)
        with GenericEnvClient(base_url=url).sync() as client:
            obs, info = local.reset(seed=5)
            assert client.reset(seed=5).observation["text"] == obs
            for action in ["search[red shoes]", "click[nothing here]"]:
                obs, reward, terminated, truncated, info = local.step(action)
                result = client.step({"action": action})
                assert (result.observation["text"], result.reward) == (obs, reward)
                assert result.observation["info"] == to_jsonable(info)
        local.close()
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_dreamgym_serve_refuses_an_unknown_id():
    result = CliRunner().invoke(cli_app, ["serve", "--env", "DreamGym/WebShopp-v0"])
    assert result.exit_code == 2
    assert "unknown env id 'DreamGym/WebShopp-v0'" in result.output and "WebShop-v0" in result.output
