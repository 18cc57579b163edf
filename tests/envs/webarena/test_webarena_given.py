"""What the seeded sites fix for a synthetic WebArena request: the next page and the evaluator's checks at stop."""

from __future__ import annotations

import json
from functools import cache

from dreamgym_env.bench.fidelity import ReferenceTransition
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.envs.webarena.reference_env import WebArenaRefEnv
from dreamgym_env.training.dataset import policy_transitions

domain = get_domain("webarena")


@cache
def _transitions(policy: str) -> list[ReferenceTransition]:
    return policy_transitions(domain, "test", policy, 300, seed=3)


def test_the_given_page_is_the_reference_envs_next_page():
    """Where a request is given the next page, it is the reference env's, but where an earlier change is out of sight."""
    given = wrong = 0
    for policy in ("expert", "noisy", "random"):
        for transition in _transitions(policy):
            request = transition.request
            if not request.given_fields:
                continue
            after = json.loads(transition.truth.next_state)
            # the JSON leaves out false flags and an empty message
            after = {"more_above": False, "more_below": False, "message": "", **after}
            given += 1
            wrong += any(after[name] != value for name, value in request.given_fields.items())
    assert given > 700  # of 900: a page an episode's change shows is the model's to write
    # a scrolled page hides the header that shows a change ("My Cart (2)"), and the page after it shows it
    assert wrong <= given // 100


def test_a_page_the_episode_changed_and_the_tab_history_are_not_given():
    env = WebArenaRefEnv(split="test")
    task = next(t for t in env.tasks if t.metadata["eval"].get("program", {}).get("check") == "cart_contains")
    observation, info = env.reset(options={"task": task})
    expert = domain.expert_policy()
    pages = []
    while True:
        action = expert(observation, info)
        pages.append((env.abstract_state, action))
        if action.startswith("stop"):
            break
        observation, _, _, _, info = env.step(action)
    start, first = pages[0]
    assert domain.given_fields(task, start, domain.parse_action(first))["url"].startswith("http://shopping.local/")
    # the cart's count on the page after adding the item is the episode's, not the seeded data's
    changed, stop = pages[-1]
    assert "My Cart (1)" in json.dumps(changed.model_dump())
    home = next(e.id for e in changed.elements if e.role == "link" and e.name == "One Stop Market")
    assert domain.given_fields(task, changed, domain.parse_action(f"click [{home}]")) == {}
    # a stop keeps any page
    assert domain.given_fields(task, changed, domain.parse_action(stop)) == changed.model_dump()
    assert domain.given_fields(task, start, domain.parse_action("go_back")) == {}


def _short(line: str) -> str:
    return line.rsplit("; short of the goal: ", 1)[1]


def test_the_stop_line_finds_what_the_evaluator_finds():
    stops = [
        transition
        for policy in ("expert", "noisy", "random")
        for transition in _transitions(policy)
        if domain.parse_action(transition.request.action).verb == "stop"
    ]
    decided = [t for t in stops if "program_state" not in t.request.task.metadata["eval"]["eval_types"]]
    assert len(decided) > 50
    for transition in decided:
        (line,) = transition.request.world
        assert line.startswith("At stop, WebArena's evaluator checks: the ")
        assert (_short(line) == "none") == (transition.truth.reward == 1.0), line
    assert {t.truth.reward for t in decided} == {0.0, 1.0}
    # a check of the sites' data is named; the episode, not the page, decides it
    (line,) = next(t for t in stops if t not in decided).request.world
    assert "the sites' data must show " in line and ": from the episode" in line


def test_the_stop_line_names_each_check():
    task = next(t for t in domain.tasks("test") if t.metadata["eval"]["eval_types"] == ["string_match"])
    (reference,) = task.metadata["eval"]["reference_answers"]["must_include"]
    start = domain.initial_abstract_state(task).model_dump_json()
    (wrong,) = domain.world_lines(task, start, "stop [nothing]")
    assert wrong.endswith(f"the answer must include {reference!r}: no; short of the goal: answer")
    (right,) = domain.world_lines(task, start, f"stop [It is {reference}]")
    assert right.endswith(": yes; short of the goal: none")
    assert domain.world_lines(task, start, "scroll [down]") == ()
    # in text mode too
    assert domain.world_lines(task, task.initial_state, f"stop [{reference}]") == (right,)
    free = domain.make_task("What is the price of the cheapest gel pen?")
    assert domain.world_lines(free, start, "stop [1]") == ()


def test_the_reference_reasoning_of_a_given_page_names_no_url():
    from dreamgym_env.training.dataset import reference_reasoning

    transition = next(t for t in _transitions("expert") if t.request.given_fields and t.request.history)
    reasoning = reference_reasoning(domain, transition.request, transition.truth)
    assert "leads to the state the environment's data gives" in reasoning
    assert "http" not in reasoning


def test_a_url_urllib_refuses_is_an_invalid_goto_and_gets_no_page():
    env = WebArenaRefEnv(split="test")
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step("goto [http://[x/]")
    assert not info["action_valid"] and info["error"] == "no page at http://[x/" and not terminated
    task = env.task
    assert task is not None
    broken = env.abstract_state.model_copy(update={"url": "http://[x/"})
    assert domain.given_fields(task, broken, domain.parse_action("scroll [down]")) == {}


def test_the_synthetic_start_page_is_the_reference_envs_so_the_first_page_is_given():
    env = WebArenaRefEnv(split="test")
    for task in domain.tasks("test")[:20]:
        env.reset(options={"task": task})
        start = domain.initial_abstract_state(task)
        assert start == env.abstract_state and domain.render_state(start) == env.state
        assert domain.given_fields(task, start, domain.parse_action("scroll [down]")) or not start.more_below
