from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from dreamgym_env.envs.registry import get_domain
from dreamgym_env.testing import AgentGymServer, ScriptedExperienceModel, ScriptedOpenAIServer
from dreamgym_env.types import ExperienceRequest, Task, Transition


@pytest.fixture
def headless_chromium() -> list[str]:
    """The command that runs the browser headless (append the page's flags and URL); the test is
    skipped without a binary, except where ``DREAMGYM_REQUIRE_CHROMIUM`` is set (``.ci/run``
    installs it and sets it), where it fails."""
    binary = next(
        (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None
    )
    if binary is None:
        if os.environ.get("DREAMGYM_REQUIRE_CHROMIUM"):
            pytest.fail("DREAMGYM_REQUIRE_CHROMIUM is set but no chromium binary is on PATH")
        pytest.skip("no chromium binary")
    return [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]


@pytest.fixture(autouse=True)
def isolated_cache_dir(tmp_path_factory, monkeypatch):
    """Keep the transition cache and model files of default-selected backends out of ~/.cache."""
    monkeypatch.setenv("DREAMGYM_CACHE_DIR", str(tmp_path_factory.mktemp("dreamgym-cache")))


@pytest.fixture
def webshop_task() -> Task:
    return get_domain("webshop").tasks("train")[0]


def page_after(request: ExperienceRequest) -> Transition:
    """A plausible WebShop page for any action, ending the episode on Buy Now with reward 1."""
    if request.action.lower() == "click[buy now]":
        return Transition(
            reasoning="bought", next_state="WebShop | done\nPurchased.", reward=1.0, terminated=True
        )
    return Transition(
        reasoning=f"after {request.action}",
        next_state=f"WebShop | item B0TEST0001\nInstruction: {request.task.instruction}\n"
        "[Back to Search] [< Prev]\nTest item\n[Buy Now]",
    )


@pytest.fixture(name="page_after")
def page_after_fixture():
    return page_after


@pytest.fixture
def scripted_model() -> Iterator[ScriptedExperienceModel]:
    model = ScriptedExperienceModel(page_after)
    yield model
    model.close()


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as srv:
        yield srv


@pytest.fixture(scope="module")
def openenv_server() -> Iterator[Callable[..., str]]:
    """Starts OpenEnv servers of DreamGym ids in threads of this process: ``start(env_id, **kwargs)``
    runs ``create_app(env_id, **kwargs)`` and returns its URL; all stop after the module."""
    pytest.importorskip("openenv", reason="needs the extra `openenv`: pip install 'dreamgym-env[openenv]'")
    import uvicorn

    from dreamgym_env.scale.openenv_server import create_app

    running: list[tuple[Any, threading.Thread]] = []

    def start(env_id: str, **kwargs: Any) -> str:
        server = uvicorn.Server(uvicorn.Config(create_app(env_id, **kwargs), port=0, log_level="error"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        running.append((server, thread))
        deadline = time.monotonic() + 30
        while not server.started and thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.started, "the test server did not start"
        return f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"

    yield start
    for server, thread in running:
        server.should_exit = True
        thread.join(timeout=10)


def agentgym_tasks(flavor: str) -> list[Task]:
    """The tasks behind a stand-in AgentGym server's indices: WebShop's test tasks; ALFWorld's train
    tasks, then its test tasks (AgentGym's games: mappings_train.json, then mappings_test.json)."""
    if flavor == "webshop":
        return list(get_domain("webshop").tasks("test"))
    alfworld = get_domain("alfworld")
    return [*alfworld.tasks("train"), *alfworld.tasks("test")]


@pytest.fixture
def agentgym_server() -> Iterator[Callable[[str], AgentGymServer]]:
    """Starts stand-in AgentGym servers over the packs' reference envs: ``start("webshop")`` (or
    ``"alfworld"``) returns one running, with :func:`agentgym_tasks` as its tasks; all stop after
    the test. The WebShop env pays WebShop's score, as the real server does."""
    running: list[AgentGymServer] = []

    def start(flavor: str) -> AgentGymServer:
        domain = get_domain(flavor)
        kwargs = {"split": "test", "reward": "score"} if flavor == "webshop" else {}
        server = AgentGymServer(
            flavor,
            lambda: domain.make_reference_env(**kwargs),
            agentgym_tasks(flavor),
        ).start()
        running.append(server)
        return server

    yield start
    for server in running:
        server.close()
