"""``dreamgym serve``: a DreamGym id served with the OpenEnv standard (:mod:`dreamgym_env.scale.openenv_server`).

OpenEnv and uvicorn load when the command runs, so that the CLI starts fast.
Wire it with ``app.command("serve")(serve_command)``.
"""

from __future__ import annotations

from typing import Annotated, Any

import gymnasium as gym
import typer

from dreamgym_env.envs.registry import registered_domains, synthetic_id
from dreamgym_env.errors import ConfigurationError, UnknownNameError
from dreamgym_env.scale import DEFAULT_MAX_SESSIONS


def serve_command(
    env: Annotated[
        str, typer.Option(help="The env id to serve, e.g. DreamGym/WebShop-v0 (see `dreamgym envs`).")
    ],
    port: Annotated[int, typer.Option(min=0, max=65535, help="TCP port to listen on.")] = 8000,
    host: Annotated[
        str, typer.Option(help="Address to listen on (0.0.0.0: every interface, for other machines).")
    ] = "127.0.0.1",
    max_sessions: Annotated[
        int, typer.Option(min=1, help="WebSocket sessions at once (each has its own env).")
    ] = DEFAULT_MAX_SESSIONS,
    model: Annotated[
        str | None,
        typer.Option(help="Synthetic ids: the endpoint's model name (default: the usual selection)."),
    ] = None,
    base_url: Annotated[
        str | None,
        typer.Option(help="Synthetic ids: the OpenAI-compatible endpoint (default: DREAMGYM_BASE_URL)."),
    ] = None,
) -> None:
    """Serve an env over HTTP and WebSocket with OpenEnv (reset, step, state; one env per session).

    A synthetic id's sessions share one experience model, chosen as usual (DREAMGYM_BASE_URL,
    DREAMGYM_MODEL, ...) unless --model/--base-url name an endpoint. Stop with Ctrl-C.
    """
    if env not in gym.registry:
        raise UnknownNameError("env id", env, (i for i in gym.registry if i.startswith("DreamGym/")))
    try:
        import uvicorn

        from dreamgym_env.scale.openenv_server import create_app
    except ImportError as exc:
        raise ConfigurationError(
            f"dreamgym serve needs OpenEnv ({exc}): pip install 'dreamgym-env[openenv]'"
        ) from None
    pack = next((d for d in registered_domains().values() if synthetic_id(d) == env), None)
    if pack is None and (model or base_url):
        raise ConfigurationError(f"{env} is not a synthetic env: it takes no --model or --base-url")
    experience_model = None
    if pack is not None:  # a synthetic id
        from dreamgym_env.envs.models import experience_model_for

        settings: dict[str, Any] = {"model": model, "base_url": base_url}
        # the pack's trained model unless an endpoint is named or configured, as gym.make chooses
        experience_model = experience_model_for(
            pack, settings={k: v for k, v in settings.items() if v is not None}
        )
    try:
        app = create_app(env, experience_model=experience_model, max_sessions=max_sessions)
        typer.echo(f"serving {env} on http://{host}:{port} (OpenEnv: /ws, /reset, /step, /state, /health)")
        uvicorn.run(app, host=host, port=port, log_level="warning")
    finally:
        if experience_model is not None:
            experience_model.close()
