"""A new backend is a ``complete`` method: the prompt, the judge and the re-asks come with ChatExperienceModel."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from dreamgym_env.envs.synthetic import DreamEnv
from dreamgym_env.errors import ModelOutputError
from dreamgym_env.experience.answers import ChatReply
from dreamgym_env.experience.backend import ChatBackend, ChatExperienceModel, Deadline
from dreamgym_env.experience.openai_backend import every_property_required
from dreamgym_env.experience.prompt import transition_schema


class CannedBackend:
    """A backend answering from a list of texts, recording what it was asked."""

    model_id = "canned"
    backend = "canned:test"

    def __init__(self, answers: Sequence[str]) -> None:
        self.answers = list(answers)
        self.asked: list[tuple[list[dict[str, str]], Mapping[str, Any] | None, Deadline | None]] = []

    async def complete(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        schema: Mapping[str, Any] | None = None,
        deadline: Deadline | None = None,
        context: str = "chat",
    ) -> ChatReply:
        self.asked.append(([dict(m) for m in messages], schema, deadline))
        return ChatReply(self.answers.pop(0), prompt_tokens=10, completion_tokens=5, cached_prompt_tokens=4)


GOOD = json.dumps(
    {"reasoning": "a page", "next_state": "WebShop | results\n[B0X]", "reward": 0, "done": False}
)


def test_a_backend_of_one_method_is_an_experience_model_that_re_asks(webshop_request):
    backend = CannedBackend(['{"reasoning": "half', GOOD])
    assert isinstance(backend, ChatBackend)
    model = ChatExperienceModel(backend, max_reasks=1, deadline_s=30)
    transition = model.predict_one(webshop_request)
    assert transition.next_state.startswith("WebShop | results") and transition.reward == 0.0
    assert (
        transition.usage.prompt_tokens,
        transition.usage.cached_prompt_tokens,
        transition.usage.attempts,
    ) == (
        20,
        8,
        2,
    )
    (first, schema, deadline), (again, _, same_deadline) = backend.asked
    assert first[0]["role"] == "system" and schema is not None and deadline is same_deadline is not None
    assert again[2] == {"role": "assistant", "content": '{"reasoning": "half'}
    assert again[3]["content"].startswith("That answer could not be used")
    model.close()


def test_answers_that_stay_unusable_raise_a_typed_error_naming_the_backend(webshop_request):
    model = ChatExperienceModel(CannedBackend(["no json"] * 3), max_reasks=2)
    with pytest.raises(ModelOutputError, match=r"backend=canned:test, attempts=3"):
        model.predict_one(webshop_request)
    model.close()


def test_a_model_read_without_its_system_prompt_gets_the_user_turn_only(webshop_request):
    backend = CannedBackend([GOOD])
    ChatExperienceModel(backend, system_prompt=False).predict_one(webshop_request)
    assert [m["role"] for m in backend.asked[0][0]] == ["user"]


def test_the_backend_serves_a_gymnasium_env():
    env = DreamEnv("webshop", ChatExperienceModel(CannedBackend([GOOD])), max_steps=3, split="test")
    env.reset(seed=0)
    observation, reward, terminated, truncated, info = env.step("search[red shoes]")
    assert "[B0X]" in observation and (reward, terminated, truncated) == (0.0, False, False)
    env.close()


def test_strict_structured_output_only_where_every_field_is_required():
    assert every_property_required(transition_schema(None))
    state = {"type": "object", "properties": {"kind": {"type": "string"}, "query": {"type": "string"}}}
    assert not every_property_required(transition_schema({**state, "required": ["kind"]}))
