from __future__ import annotations

import pytest

from dreamgym_env.curriculum import Curriculum, EndpointChat, TaskGenerator, TaskStats
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.envs.synthetic import DreamEnv
from dreamgym_env.envs.webshop.task_variations import WebShopTaskVariations
from dreamgym_env.errors import ConfigurationError, UnknownNameError
from dreamgym_env.experience.openai_backend import OpenAIExperienceModel
from dreamgym_env.testing import ScriptedExperienceModel, ok

TASKS = list(get_domain("webshop").tasks("train")[:8])


def test_webshop_domain_provides_its_variations():
    assert isinstance(get_domain("webshop").task_variations(), WebShopTaskVariations)


def test_generate_varies_the_highest_variance_tasks(server, parent, fresh_candidates, tmp_path):
    chat = EndpointChat(base_url=server.url, model="writer", api_key=None)
    generator = TaskGenerator(chat, WebShopTaskVariations(get_domain("webshop")), concurrency=1)
    curriculum = Curriculum(TASKS, stats=tmp_path / "stats.db", generator=generator, seed=0)
    assert curriculum.generate(2).note.startswith("no task has reward variance")
    curriculum.record_group(parent, [1.0, 0.0, 1.0, 0.0])
    curriculum.record_group(TASKS[1], [1.0, 1.0, 1.0, 1.0])
    server.enqueue(ok({"tasks": fresh_candidates(parent, 2)}))
    report = curriculum.generate(2)
    assert len(report.accepted) == 2 and [t.parent_id for t in curriculum.generated] == [parent.id] * 2
    assert parent.id in server.requests[0]["messages"][1]["content"]
    assert TASKS[1].id not in server.requests[0]["messages"][1]["content"]
    curriculum.close()
    reopened = Curriculum(TASKS, stats=tmp_path / "stats.db", seed=0)
    assert reopened.generated == curriculum.generated and len(reopened) == len(TASKS) + 2
    assert (
        reopened.variance(parent) == 0.25 and reopened.task(curriculum.generated[0].id).parent_id == parent.id
    )
    reopened.close()
    chat.close()


def test_for_env_and_misuse(scripted_model):
    env = DreamEnv("webshop", scripted_model, tasks=TASKS)
    curriculum = Curriculum.for_env(env, seed=0)
    assert curriculum.tasks == TASKS and curriculum.generator is None
    with pytest.raises(ConfigurationError, match="no task generator"):
        curriculum.generate(1)
    with pytest.raises(ConfigurationError):
        Curriculum([])
    with pytest.raises(UnknownNameError, match="Did you mean 'cluster'"):
        Curriculum(TASKS, grouping="clusters")
    with pytest.raises(UnknownNameError):
        curriculum.task("nope")
    assert TASKS[0] in curriculum and "nope" not in curriculum


def test_chat_from_experience_model(server):
    model = OpenAIExperienceModel(base_url=server.url, model="same-model", api_key=None)
    chat = EndpointChat.from_experience_model(model)
    assert chat.config.base_url == model.config.base_url and chat.model_id == "same-model"
    assert chat.config.temperature == 0.8  # writing tasks samples
    with pytest.raises(ConfigurationError, match="not an endpoint experience model"):
        EndpointChat.from_experience_model(ScriptedExperienceModel())


def test_stats_object_can_be_shared(tmp_path):
    stats = TaskStats(tmp_path / "s.db")
    first = Curriculum(TASKS, stats=stats, seed=0)
    first.record(TASKS[0], 1.0)
    assert Curriculum(TASKS, stats=stats, seed=0).score(TASKS[0]).episodes == 1
    stats.close()
