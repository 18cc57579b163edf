"""The trained experience models the built-in packs ship: present, current with their prompts, small.

These fail when a pack's prompt, state schema or request assembly (``PROMPT_VERSION``) changes
without a rebuilt adapter (``dreamgym experience build --domain D``), when an adapter file is
replaced without its manifest, or when a pack stops shipping its model.
"""

from __future__ import annotations

import pytest

from dreamgym_env.envs.models import pack_trained_model
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.experience.trained import file_sha256

SHIPPED = ("webshop", "alfworld", "webarena")
"""The built-in packs that ship a trained model (docs/experience-models.md says why the others do not yet)."""
BUILT_IN = ("webshop", "alfworld", "webarena")
MAX_ADAPTER_MB = 20
"""Three packs' adapters and the rest of the wheel stay under PyPI's 100 MB."""


def test_exactly_the_listed_packs_ship_a_trained_model():
    assert tuple(name for name in BUILT_IN if pack_trained_model(get_domain(name)) is not None) == SHIPPED


@pytest.mark.parametrize("name", SHIPPED)
def test_a_shipped_model_is_current_with_its_packs_prompt_and_its_adapter_file(name):
    pack = get_domain(name)
    trained = pack_trained_model(pack)
    assert trained is not None and trained.domain == name
    assert trained.staleness(pack) is None, f"rebuild it: dreamgym experience build --domain {name}"
    assert trained.state_mode == "structured"  # the synthetic ids' default mode
    assert trained.adapter_gguf is not None and file_sha256(trained.adapter_gguf) == trained.adapter_sha256
    assert trained.adapter_gguf.stat().st_size < MAX_ADAPTER_MB * 1e6
    assert trained.base == "qwen-0.5b" and trained.base_gguf is None  # portable: the preset, not a path
    assert trained.local_settings() == {"preset": "qwen-0.5b", "lora_adapter": str(trained.adapter_gguf)}


@pytest.mark.parametrize("name", SHIPPED)
def test_a_shipped_model_records_its_data_and_its_held_out_measurements(name):
    trained = pack_trained_model(get_domain(name))
    assert trained is not None
    train_mix = trained.data["examples"]["train"]
    assert set(train_mix) == {"expert", "noisy", "random"} and min(train_mix.values()) > 0
    assert trained.data["train_tasks"] == len(trained.train_task_ids) > 0
    measured = trained.evaluation
    assert measured["adapter_sha256"] == trained.adapter_sha256  # measured on this very adapter
    assert measured["trained"]["n"] == measured["base"]["n"] > 0
    test_tasks = {t.id for t in get_domain(name).tasks("test")}
    assert not trained.train_task_ids & test_tasks  # evaluation tasks were never trained on
