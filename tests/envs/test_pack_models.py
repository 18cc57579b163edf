"""The trained experience models the built-in packs ship: present, current with their requests, small.

These fail when what a pack's requests hold changes without a rebuilt model (``dreamgym experience
build --domain D --kind adapter|distilled``): its prompt, state schema or request assembly
(``PROMPT_VERSION``, the fingerprint), and its world lines, given, carried and updated fields or
reference reasoning (the held-out split made again); when a model file is replaced without its
manifest, or when a pack stops shipping its model.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from dreamgym_env.envs.models import pack_models, pack_trained_model
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.errors import ConfigurationError
from dreamgym_env.experience.trained import file_sha256
from dreamgym_env.training.dataset import examples_sha256, held_out_examples

SHIPPED = ("webshop", "alfworld", "webarena")
"""The built-in packs that ship a trained model (docs/experience-models.md says why the others do not yet)."""
ADAPTERS = ("webshop", "alfworld")
"""The built-in packs that ship a LoRA adapter (``local:adapter``), rebuilt on 2026-12-06 on today's requests."""
BUILT_IN = ("webshop", "alfworld", "webarena")
MAX_ADAPTER_MB = 20
"""The packs' adapters and the rest of the wheel stay under PyPI's 100 MB."""


def test_exactly_the_listed_packs_ship_a_trained_model():
    assert tuple(name for name in BUILT_IN if pack_trained_model(get_domain(name)) is not None) == SHIPPED


@pytest.mark.parametrize("name", ADAPTERS)
def test_a_shipped_adapter_is_current_with_its_packs_prompt_and_its_file(name):
    pack = get_domain(name)
    trained = pack_models(pack).adapter
    assert trained is not None and trained.domain == name
    assert trained.staleness(pack) is None, f"rebuild it: {trained.rebuild_command}"
    assert trained.state_mode == "structured"  # the synthetic ids' default mode
    assert trained.adapter_gguf is not None and file_sha256(trained.adapter_gguf) == trained.adapter_sha256
    assert trained.adapter_gguf.stat().st_size < MAX_ADAPTER_MB * 1e6
    assert trained.base == "qwen-0.5b" and trained.base_gguf is None  # portable: the preset, not a path
    assert trained.local_settings() == {"preset": "qwen-0.5b", "lora_adapter": str(trained.adapter_gguf)}


@pytest.mark.parametrize("name", ADAPTERS)
def test_a_shipped_adapter_records_its_data_and_its_held_out_measurements(name):
    trained = pack_models(get_domain(name)).adapter
    assert trained is not None
    train_mix = trained.data["examples"]["train"]
    assert set(train_mix) == {"expert", "noisy", "random"} and min(train_mix.values()) > 0
    assert trained.data["train_tasks"] == len(trained.train_task_ids) > 0
    measured = trained.evaluation
    assert measured["adapter_sha256"] == trained.adapter_sha256  # measured on this very adapter
    assert measured["trained"]["n"] == measured["base"]["n"] > 0
    test_tasks = {t.id for t in get_domain(name).tasks("test")}
    assert not trained.train_task_ids & test_tasks  # evaluation tasks were never trained on


DISTILLED = ("webshop", "alfworld", "webarena")
"""The built-in packs that ship a distilled model (``local:distilled``), their default."""
MAX_DISTILLED_MB = 10


def _distilled(name: str):
    return pack_models(get_domain(name)).distilled


@pytest.mark.parametrize("name", DISTILLED)
def test_a_shipped_distilled_model_is_current_and_measured_on_its_file(name):
    pack = get_domain(name)
    distilled = _distilled(name)
    assert distilled is not None and distilled.domain == name and distilled.base == "distilled"
    assert distilled.staleness(pack) is None, f"rebuild it: {distilled.rebuild_command}"
    assert distilled.rebuild_command.startswith(f"dreamgym experience build --domain {name} --kind distilled")
    assert distilled.model_gguf is not None and distilled.model_gguf.stat().st_size < MAX_DISTILLED_MB * 1e6
    assert distilled.evaluation["model_sha256"] == distilled.model_sha256 == file_sha256(distilled.model_gguf)
    assert distilled.evaluation["n"] >= 100 and distilled.system_prompt is False
    test_tasks = {t.id for t in pack.tasks("test")}
    assert distilled.train_task_ids and not distilled.train_task_ids & test_tasks


@pytest.mark.parametrize(
    ("name", "kind"), [(name, "distilled") for name in DISTILLED] + [(name, "adapter") for name in ADAPTERS]
)
def test_a_shipped_model_was_trained_on_the_requests_the_pack_makes_today(name, kind):
    """The prompt fingerprint misses world lines, given fields and reasoning: the held-out split, made again, does not."""
    trained = pack_models(get_domain(name)).get(kind)
    assert trained is not None
    record = trained.data["test_split"]
    remade = held_out_examples(name, record["n"], seed=record["seed"])
    assert len(remade) >= 0.9 * record["n"]
    assert examples_sha256(remade) == record["sha256"], f"stale; rebuild it: {trained.rebuild_command}"


def test_the_held_out_split_changes_with_a_packs_world_lines(monkeypatch):
    pack = get_domain("webshop")
    record = _distilled("webshop").data["test_split"]
    supplies = type(pack).supplies

    def with_one_line_more(self, *args):
        supplied = supplies(self, *args)
        return replace(supplied, world=(*supplied.world, "one line more"))

    monkeypatch.setattr(type(pack), "supplies", with_one_line_more)
    assert examples_sha256(held_out_examples(pack, record["n"], seed=record["seed"])) != record["sha256"]


@pytest.mark.parametrize("name", DISTILLED)
def test_local_distilled_names_the_packs_distilled_model(name, monkeypatch):
    from dreamgym_env.envs.models import experience_model_for
    from dreamgym_env.experience import local

    monkeypatch.setattr(local, "xllamacpp_installed", lambda: True)  # built, never loaded
    model = experience_model_for(get_domain(name), "local:distilled")
    distilled = _distilled(name)
    assert distilled is not None
    assert isinstance(model, local.LocalExperienceModel)
    assert model.model_file == distilled.model_gguf and model.settings.system_prompt is False
    assert model.settings.n_parallel == 16


PREFERS_DISTILLED = ("alfworld", "webshop", "webarena")
"""The packs whose synthetic envs use their distilled model by default (docs/results.md says why)."""


@pytest.mark.parametrize("name", BUILT_IN)
def test_the_default_model_is_the_one_the_pack_prefers_and_both_stay_nameable(name, monkeypatch):
    from dreamgym_env.envs.models import experience_model_for
    from dreamgym_env.experience import local

    monkeypatch.setattr(local, "xllamacpp_installed", lambda: True)  # built, never loaded
    pack, models = get_domain(name), pack_models(get_domain(name))
    kind = "distilled" if name in PREFERS_DISTILLED else "adapter"
    assert pack.preferred_experience_model == kind and models.default is models.get(kind)
    assert (models.adapter is not None) == (name in ADAPTERS)
    default = experience_model_for(pack)
    assert isinstance(default, local.LocalExperienceModel) and default.trained_model is not None
    assert models.default is not None and default.trained_model.directory == models.default.directory
    if name not in ADAPTERS:
        with pytest.raises(
            ConfigurationError,
            match=f"the {name} pack ships no adapter experience model; train one with `dreamgym experience build --domain {name} --kind adapter`",
        ):
            experience_model_for(pack, "local:adapter")
        return
    adapter = experience_model_for(pack, "local:adapter")
    assert isinstance(adapter, local.LocalExperienceModel) and adapter.trained_model is not None
    assert models.adapter is not None and adapter.trained_model.directory == models.adapter.directory
    assert adapter.settings.lora_adapter == str(models.adapter.adapter_gguf)


def test_a_pack_shipping_only_its_less_preferred_model_gets_that_one(tmp_path):
    from dreamgym_env.experience.trained import PackModels

    distilled = _distilled("alfworld")
    assert PackModels(adapter=None, distilled=distilled, preferred="adapter").default is distilled
    assert PackModels(preferred="distilled").default is None
    assert PackModels.find(tmp_path).default is None and PackModels.find(None).adapter is None


def test_local_distilled_without_one_is_a_clear_error(tmp_path):
    from dreamgym_env.experience.selection import model_from_spec

    with pytest.raises(ConfigurationError, match="ships no distilled experience model"):
        model_from_spec("local:distilled", domain="mine")
    with pytest.raises(ConfigurationError, match="ships no adapter experience model"):
        model_from_spec("local:adapter", domain="mine")


def test_sim2real_gives_a_distilled_model_the_state_mode_it_learned():
    from dreamgym_env.rl.sim2real import Sim2RealConfig, synthetic_settings

    distilled = _distilled("webshop")
    assert distilled is not None and distilled.state_mode == "structured"
    # WebShop's text pages list their actions, so the oracle's synthetic env would be in text mode
    assert synthetic_settings(Sim2RealConfig("webshop", reward="outcome")).state_mode == "text"
    for name in ("local", "local:distilled", f"local:{distilled.directory}"):
        assert (
            synthetic_settings(Sim2RealConfig("webshop", model=name, reward="outcome")).state_mode
            == "structured"
        )


def test_sim2real_gives_auto_the_state_mode_of_the_model_gym_make_serves(monkeypatch):
    from dreamgym_env.experience import selection
    from dreamgym_env.rl.sim2real import Sim2RealConfig, synthetic_settings

    for name in (
        *selection.ENDPOINT_VARIABLES,
        "DREAMGYM_BACKEND",
        "DREAMGYM_LOCAL_MODEL",
        "DREAMGYM_LOCAL_MODEL_PRESET",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(selection, "local_backend_available", lambda: True)
    auto = Sim2RealConfig("webshop", model="auto", reward="outcome")
    assert synthetic_settings(auto).state_mode == "structured"  # the pack's distilled model, offline
    monkeypatch.setenv("DREAMGYM_BASE_URL", "http://127.0.0.1:9/v1")
    assert synthetic_settings(auto).state_mode == "text"  # an endpoint: the mode WebShop pages suggest
