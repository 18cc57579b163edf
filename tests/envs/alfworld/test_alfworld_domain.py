from __future__ import annotations

from collections import Counter
from typing import Any

from pydantic import BaseModel

from dreamgym_env.agents import make_policy
from dreamgym_env.domain import ActionError, ParsedAction
from dreamgym_env.envs.alfworld.domain import ALFWorldDomain
from dreamgym_env.envs.alfworld.goal import Goal
from dreamgym_env.envs.alfworld.grammar import parse_command
from dreamgym_env.envs.alfworld.reference_env import ALFWorldRefEnv
from dreamgym_env.envs.alfworld.state import NOTHING_HAPPENS
from dreamgym_env.envs.alfworld.world import PROCESSES
from dreamgym_env.envs.synthetic import DreamEnv
from dreamgym_env.testing.doubles import ScriptedExperienceModel
from dreamgym_env.types import Task, Transition

DOMAIN = ALFWorldDomain()


def _world(task: Task, state: str, action: str) -> tuple[str, ...]:
    """The world lines a request for ``action`` on ``state`` (an observation's text or a state's JSON) shows."""
    return tuple(DOMAIN.answer_fields(state, action, task)["world"])


def _given(task: Task, state: BaseModel, action: str) -> dict[str, Any]:
    """The fields the room fixes in the next state of ``action`` on the abstract ``state``."""
    return DOMAIN.answer_fields(state.model_dump_json(), action, task)["given_fields"]


def _settled(task: Task, before: BaseModel, action: ParsedAction, answered: BaseModel) -> BaseModel:
    """The model's ``answered`` next state of ``action`` on ``before``, as the synthetic household settles it."""
    return DOMAIN.supplied_fields(task, before.model_dump_json(), action, abstract=before).settled(answered)


def test_domain_basics():
    assert DOMAIN.name == "alfworld" and DOMAIN.max_episode_steps == 50
    assert isinstance(DOMAIN.parse_action("go to fridge 1"), ParsedAction)
    assert isinstance(DOMAIN.parse_action("fly"), ActionError)
    assert DOMAIN.invalid_action_feedback("You arrive at fridge 1.", ActionError("x")) == "Nothing happens."
    assert DOMAIN.admissible_actions("You arrive at fridge 1. The fridge 1 is closed.") is None
    assert len(DOMAIN.tasks("train")) == 3528 and len(DOMAIN.tasks("test")) == 504
    assert isinstance(DOMAIN.make_reference_env(split="test"), ALFWorldRefEnv)


def test_prompt_is_concise_and_names_every_command():
    prompt = DOMAIN.prompt
    words = len(f"{prompt.rules} {prompt.state_format} {prompt.reward_rubric}".split())
    assert words < 500
    for command in (
        "go to",
        "take",
        "put",
        "open",
        "close",
        "use",
        "clean",
        "heat",
        "cool",
        "examine",
        "inventory",
    ):
        assert command in prompt.rules
    assert "Nothing happens." in prompt.state_format


def test_make_task_from_an_alfworld_instruction_is_scorable():
    task = DOMAIN.make_task("Put a clean apple in fridge")
    assert task.instruction == "Put a clean apple in fridge"
    assert Goal.of_task(task) == Goal("pick_clean_then_place", "apple", "fridge")
    env = ALFWorldRefEnv(tasks=[task])
    obs, info = env.reset(options={"task": task})
    assert obs == task.initial_state
    expert = DOMAIN.expert_policy()
    for _ in range(20):
        obs, reward, terminated, _, info = env.step(expert(obs, info))
        if terminated:
            break
    assert info["won"]


def test_make_task_from_a_free_instruction():
    task = DOMAIN.make_task("make the kitchen tidy")
    assert "goal" not in task.metadata
    assert task.initial_state.endswith("Your task is to: make the kitchen tidy")
    assert DOMAIN.make_task("make the kitchen tidy") == task


def test_a_text_request_shows_the_starting_places_of_the_receptacles_its_action_names():
    task = DOMAIN.tasks("test")[0]
    world = task.world.splitlines()
    cabinet_1 = next(line for line in world if line.startswith('"cabinet 1":'))
    assert any(line.startswith('"cabinet 12":') for line in world)  # a name cabinet 1 is a prefix of
    text = task.initial_state
    assert _world(task, text, "go to cabinet 1") == (cabinet_1,)
    fridge = next(line for line in world if line.startswith('"fridge 1":'))
    assert _world(task, text, "put apple 1 in/on fridge 1") == (fridge,)
    assert _world(task, text, "look") == ()
    assert _world(task, text, "fly to the moon") == ()
    structured = DOMAIN.initial_abstract_state(task).model_dump_json()
    assert _world(task, structured, "go to cabinet 1") == ()  # a given field instead


def test_a_structured_put_shows_what_the_receptacle_holds_after_it_as_the_reference_env_does():
    """The put line is the reference env's next ``seen`` entry wherever the put works, its type counted."""
    import json

    from dreamgym_env.envs.alfworld.domain import COUNT_WORDS
    from dreamgym_env.training.dataset import policy_transitions

    worked = 0
    for policy in ("expert", "noisy", "random"):
        for transition in policy_transitions(DOMAIN, "test", policy, 200, seed=5):
            request, after = transition.request, json.loads(transition.truth.next_state)
            lines = request.world
            if not request.action.startswith("put "):
                assert lines == [], request.action
                continue
            (line,) = lines
            said, held = line.removeprefix("If the put works, ").split(": ", 1)
            recep, count = said.split(" holds ")
            obj = request.action.split()[1]
            objects = json.loads(held)
            assert count == f"{COUNT_WORDS[sum(o.split()[0] == obj for o in objects)]} {obj}", line
            if after["inventory"]:  # the put did not work: the line says what it would have left
                continue
            assert after["seen"][recep] == objects, request.action
            worked += 1
    assert worked > 30, worked
    task = DOMAIN.tasks("test")[0]
    start = DOMAIN.initial_abstract_state(task).model_dump_json()
    assert _world(task, start, "put apple 1 in/on moon 1") == ()
    assert _world(task, start, "put apple 1") == ()


def test_the_given_seen_is_the_reference_envs_on_reference_episodes():
    """What a look shows is looked up in the room: it equals the reference env's next ``seen``."""
    import json

    from dreamgym_env.training.dataset import policy_transitions

    given = {"go": 0, "open": 0, "examine": 0}
    for policy in ("expert", "noisy", "random"):
        for transition in policy_transitions(DOMAIN, "test", policy, 60, seed=3):
            request, after = transition.request, json.loads(transition.truth.next_state)
            verb = DOMAIN.parse_action(request.action).verb
            if verb in given:
                assert list(request.given_fields) == ["seen"], request.action
                assert after["seen"] == request.given_fields["seen"], request.action
                assert list(after["seen"]) == list(request.given_fields["seen"])  # the order too
                given[verb] += 1
                assert "seen" not in request.updated_fields
            else:
                assert request.given_fields == {}, request.action
    assert given["go"] > 40 and given["open"] > 5, given


def test_a_look_shows_the_room_only_where_the_command_can_see_inside():
    task = DOMAIN.tasks("test")[0]
    contents = {name: objs for name, objs in (line.split(": ", 1) for line in task.world.splitlines())}
    start = DOMAIN.initial_abstract_state(task)
    open_shelf = next(r for r in start.receptacles if r.startswith(("countertop", "shelf", "diningtable")))
    cabinet = next(r for r in start.receptacles if r.startswith("cabinet"))

    def seen_after(state, action):
        return _given(task, state, action)["seen"]

    import json

    assert seen_after(start, f"go to {open_shelf}") == {open_shelf: json.loads(contents[f'"{open_shelf}"'])}
    assert seen_after(start, f"go to {cabinet}") == {}  # closed: nothing seen
    assert seen_after(start, f"open {cabinet}") == {}  # not standing at it: nothing happens
    at_cabinet = start.model_copy(update={"location": cabinet, "is_open": False})
    assert seen_after(at_cabinet, f"open {cabinet}") == {cabinet: json.loads(contents[f'"{cabinet}"'])}
    emptied = at_cabinet.model_copy(update={"seen": {cabinet: []}, "is_open": True})
    assert seen_after(emptied, f"go to {cabinet}") == {cabinet: []}  # what the agent left, not the start
    assert seen_after(start, "go to cabinet 999") == {}
    assert _given(task, start, f"take apple 1 from {open_shelf}") == {}


def _reference_steps(policy_name: str, tasks: int):
    """(task, state before, parsed action, state after) of a policy's valid steps in the reference household."""
    env = DOMAIN.make_reference_env(split="test")
    policy = make_policy(policy_name, DOMAIN, seed=0)
    for task in DOMAIN.tasks("test")[:tasks]:
        observation, info = env.reset(seed=0, options={"task": task})
        policy.reset()
        for _ in range(30):
            before, action = env.abstract_state, policy(observation, info)
            observation, _, terminated, truncated, info = env.step(action)
            parsed = DOMAIN.parse_action(action)
            if info["action_valid"] and isinstance(parsed, ParsedAction):
                yield task, before, parsed, env.abstract_state
            if terminated or truncated:
                break


def test_settling_the_reference_households_own_next_state_changes_nothing():
    settled: Counter[str] = Counter()
    for policy_name in ("expert", "noisy"):
        for task, before, action, after in _reference_steps(policy_name, 12):
            assert _settled(task, before, action, after) == after, action.text
            settled[action.verb] += after.feedback not in ("", NOTHING_HAPPENS)
    assert settled["take"] >= 5 and settled["put"] >= 5 and sum(settled[v] for v in PROCESSES) >= 2


def test_a_take_or_put_the_model_judged_to_work_is_written_as_the_household_writes_it():
    steps = [s for s in _reference_steps("expert", 12) if s[2].verb in ("take", "put")]
    for task, before, action, after in steps:
        obj = parse_command(action.text).obj
        wrong = f"{obj.rsplit(' ', 1)[0]} 9"  # the small model's slip: another number of the same kind
        slipped = after.model_copy(
            update={
                "feedback": after.feedback.replace(obj, wrong),
                "inventory": [wrong] if after.inventory else [],
                "seen": {
                    name: [wrong if o == obj else o for o in objects] for name, objects in after.seen.items()
                },
            }
        )
        assert slipped != after
        assert _settled(task, before, action, slipped) == after
        failed = before.model_copy(update={"event": "message", "feedback": NOTHING_HAPPENS})
        assert _settled(task, before, action, failed) == failed  # the verdict stays the model's
    assert len(steps) >= 10


def test_the_synthetic_household_shows_the_settled_state_of_a_slipped_take():
    """A model that judges every step right but writes another object's number after a take."""
    task = next(t for t in DOMAIN.tasks("test") if Goal.of_task(t).family == "pick_and_place")
    reference = DOMAIN.make_reference_env(split="test")
    observation, info = reference.reset(seed=0, options={"task": task})

    def answer(request):
        truth = reference.abstract_state
        if request.action.startswith("take "):
            obj = parse_command(request.action).obj
            truth = truth.model_copy(
                update={"feedback": truth.feedback.replace(obj, f"{obj} 9"), "inventory": []}
            )
        return Transition(next_state=truth.model_dump_json(), reward=0.0, terminated=False)

    synthetic = DreamEnv(DOMAIN, ScriptedExperienceModel(answer), split="test", state_mode="structured")
    synthetic.reset(seed=0, options={"task": task})
    expert = DOMAIN.expert_policy()
    took = False
    for _ in range(8):
        action = expert(observation, info)
        observation, _, terminated, _, info = reference.step(action)
        shown, *_ = synthetic.step(action)
        assert shown == observation, action
        took |= action.startswith("take ")
        if terminated:
            break
    assert took
