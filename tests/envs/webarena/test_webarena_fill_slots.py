"""WebArena's free slots: typing takes the instruction's phrases, ``stop`` the page's values."""

from __future__ import annotations

from dreamgym_env.envs.registry import get_domain
from dreamgym_env.envs.webarena.domain import instruction_phrases, page_values
from dreamgym_env.wrappers.choice_actions import candidate_actions, slot_filler


def test_instruction_phrases_name_what_a_form_or_search_needs():
    assert instruction_phrases("What is the price of Solstice Deluxe Gel Pens?") == [
        "Solstice Deluxe Gel Pens"
    ]
    assert instruction_phrases("Buy Bluebird Natural Notebook.") == ["Bluebird Natural Notebook"]
    assert instruction_phrases("Change the status of order #119 to Processing.") == ["119", "Processing"]
    assert instruction_phrases("Add mrdoob as a Developer of the project kilian/task-runner.")[:1] == [
        "kilian/task-runner"
    ]
    assert {"mrdoob", "Developer"} <= set(
        instruction_phrases("Add mrdoob as a Developer of the project k/t.")
    )
    route = instruction_phrases("How long does it take to walk from Market Square to Kennywood?")
    assert route[:2] == ["Market Square", "Kennywood"]


def test_page_values_drop_labels_and_keep_numbers():
    page = "Tab 0 (current): x\nURL: http://shopping.local/\n[9] StaticText 'Price: $20.35'\n[11] StaticText '5 Reviews'"
    assert page_values(page) == ["$20.35", "20.35", "5 Reviews", "5", "Reviews"]


def test_the_expert_plan_lies_within_the_candidates_on_most_test_tasks():
    domain = get_domain("webarena")
    env = domain.make_reference_env(split="test")
    expert, fill = domain.expert_policy(), slot_filler(domain)
    tasks = domain.tasks("test")
    within = 0
    for task in tasks:
        observation, info = env.reset(options={"task": task})
        ok = True
        for _ in range(domain.max_episode_steps):
            action = expert(observation, info)
            candidates = {
                domain.parse_action(c).text for c in candidate_actions(info, 10_000, fill, observation)
            }
            if domain.parse_action(action).text not in candidates:
                ok = False
                break
            observation, _, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                break
        within += ok
    # was 4 of 165 when every slot took the whole instruction; answers computed from several
    # page values (a count, a sum) stay out of reach of one candidate list
    assert within >= 0.85 * len(tasks)
