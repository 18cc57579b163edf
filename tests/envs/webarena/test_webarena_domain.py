from __future__ import annotations

import pytest

from dreamgym_env.domain import ActionError, ParsedAction
from dreamgym_env.envs.webarena.domain import WebArenaDomain
from dreamgym_env.envs.webarena.expert import WebArenaExpert
from dreamgym_env.envs.webarena.prompt import PROMPT
from dreamgym_env.envs.webarena.reference_env import WebArenaRefEnv
from dreamgym_env.errors import ConfigurationError
from dreamgym_env.task_variations import Rejection
from dreamgym_env.types import Task

DOMAIN = WebArenaDomain()


def test_domain_basics():
    assert DOMAIN.name == "webarena" and DOMAIN.max_episode_steps == 30
    assert DOMAIN.prompt is PROMPT
    words = len(f"{PROMPT.rules} {PROMPT.state_format} {PROMPT.reward_rubric}".split())
    assert words < 500
    assert isinstance(DOMAIN.make_reference_env(split="test"), WebArenaRefEnv)
    assert isinstance(DOMAIN.expert_policy(), WebArenaExpert)


def test_admissible_actions_and_validation_from_the_observation_text():
    env = WebArenaRefEnv(split="test", observation="axtree")
    obs, info = env.reset(seed=0)
    listed = DOMAIN.admissible_actions(obs)
    assert listed is not None and "stop [<answer>]" in listed
    clicks = [a for a in info["admissible_actions"] if a.startswith("click")]
    assert set(clicks) <= set(listed)
    ok = DOMAIN.parse_action(clicks[0])
    assert isinstance(ok, ParsedAction) and DOMAIN.validate_action(ok, obs) is None
    missing = DOMAIN.parse_action("click [4242]")
    assert isinstance(missing, ParsedAction)
    assert isinstance(DOMAIN.validate_action(missing, obs), ActionError)
    typing_into_root = DOMAIN.parse_action("type [1] [x]")
    assert isinstance(typing_into_root, ParsedAction)
    assert isinstance(DOMAIN.validate_action(typing_into_root, obs), ActionError)


def test_terminal_action_and_feedback():
    stop = DOMAIN.parse_action("stop [42]")
    assert isinstance(stop, ParsedAction) and DOMAIN.is_terminal_action(stop)
    click = DOMAIN.parse_action("click [3]")
    assert isinstance(click, ParsedAction) and not DOMAIN.is_terminal_action(click)
    once = DOMAIN.invalid_action_feedback("page", ActionError("first"))
    twice = DOMAIN.invalid_action_feedback(once, ActionError("second"))
    assert twice == "page\nInvalid action: second"


def test_make_task_picks_the_site_or_refuses():
    task = DOMAIN.make_task("Star the project dotfiles on gitlab")
    assert task.metadata["site"] == "gitlab" and task.initial_state.startswith("Tab 0 (current): Projects")
    assert (
        DOMAIN.make_task("How long does it take to walk from the zoo to the park?").metadata["site"] == "map"
    )
    with pytest.raises(ConfigurationError):
        DOMAIN.make_task("Tell me a joke")


def test_task_variations_build_feasible_and_reject_unknown_names():
    variations = DOMAIN.task_variations()
    parent = DOMAIN.tasks("test")[0]
    post = next(t for t in DOMAIN.tasks() if t.metadata["template"] == "reddit.author").metadata["slots"]
    built = variations.build(
        {
            "parent_id": parent.id,
            "template": "reddit.comment",
            "slots": {"comment": "Nice one", "post": post["post"].upper(), "forum": post["forum"]},
        },
        parent,
    )
    assert isinstance(built, Task) and built.parent_id == parent.id and built.metadata["generated"]
    assert (
        built.instruction == f"Post a comment 'Nice one' on the post '{post['post']}' in /f/{post['forum']}."
    )
    env = WebArenaRefEnv(tasks=[built])
    obs, info = env.reset(options={"task": built})
    expert = WebArenaExpert()
    for _ in range(10):
        obs, reward, terminated, _, info = env.step(expert(obs, info))
        if terminated:
            break
    assert reward == 1.0
    for slots, kind in (({"product": "iPhone 15"}, "infeasible"), ({}, "malformed")):
        rejected = variations.build(
            {"parent_id": parent.id, "template": "shopping.price", "slots": slots}, parent
        )
        assert isinstance(rejected, Rejection) and rejected.kind == kind
    unknown = variations.build({"parent_id": parent.id, "template": "facebook.like", "slots": {}}, parent)
    assert isinstance(unknown, Rejection) and unknown.kind == "malformed"
    assert variations.fingerprint(built) == variations.fingerprint(
        built.model_copy(update={"instruction": "x"})
    )
    assert (
        "reddit.comment" in variations.describe()
        and variations.candidate_schema()["required"][1] == "template"
    )
