"""The ALFWorld expert: plans a task's commands once from the room and the goal, replans on surprise.

Like ALFWorld's handcoded expert it has an oracle's knowledge: it rebuilds the task's room
from ``info["task"].metadata`` and knows where every object starts. It keeps a belief of the
room (a :class:`~dreamgym_env.envs.alfworld.household.Household`), predicts the observation of
each of its commands, and plans again only when an observation differs from the prediction:
its command failed, or another policy acted in between (a noisy expert's random actions).
ALFWorld's feedback names what changed (``You pick up the apple 1 from the countertop 1.``),
so it corrects its belief from the text and from ``info["admissible_actions"]``, asks
``inventory`` after a failed command, and searches the room for an object it lost track of.
"""

from __future__ import annotations

import re
from typing import Any

from dreamgym_env.envs.alfworld.goal import Goal, GoalCheck
from dreamgym_env.envs.alfworld.grammar import Command, parse_command
from dreamgym_env.envs.alfworld.household import Household
from dreamgym_env.envs.alfworld.state import NOTHING_HAPPENS
from dreamgym_env.envs.alfworld.tasks import world_of
from dreamgym_env.envs.alfworld.world import PROCESSES, can_contain, kind_of
from dreamgym_env.errors import ConfigurationError
from dreamgym_env.types import Task

MAX_FAILURES = 6
"""After this many failed commands in a row the expert takes admissible actions in turn to get unstuck."""
_NAME = r"([a-z]+ \d+)"
_ITEMS = re.compile(r"a ([a-z]+ \d+)")
_VIEW = re.compile(
    rf"(?:On the {_NAME}, you see (.*)|The {_NAME} is closed|The {_NAME} is open\. In it, you see (.*))\.$"
)
_ARRIVE = re.compile(r"You arrive at loc \d+\. (.*)$")
_OPEN = re.compile(rf"You open the {_NAME}\. (.*)$")
_CLOSE = re.compile(rf"You close the {_NAME}\.$")
_TAKE = re.compile(rf"You pick up the {_NAME} from the {_NAME}\.$")
_PUT = re.compile(rf"You put the {_NAME} in/on the {_NAME}\.$")
_PROCESS = re.compile(rf"You (clean|heat|cool) the {_NAME} using the {_NAME}\.$")
_TOGGLE = re.compile(rf"You turn on the {_NAME}\.$")
_CARRY = re.compile(rf"You are carrying: a {_NAME}\.$")
_FACING = re.compile(rf"You are facing the {_NAME}\.")


class ALFWorldExpert:
    """Solves ALFWorld tasks from the task's room and goal (see the module docstring).

    A policy ``(observation, info) -> action`` that needs ``info["task"]`` (a Task of this
    domain) and uses ``info["admissible_actions"]`` when present. It keeps its belief for the
    current episode; :meth:`reset` forgets it (a new task, or the task's first observation,
    starts a new episode too).
    """

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Forget the current episode."""
        self._task_id: str | None = None
        self._house: Household | None = None
        self._goal: Goal | None = None
        self._check: GoalCheck | None = None
        self._plan: list[str] = []
        self._last: Command | None = None
        self._failures = 0
        self._lost: set[str] = set()
        self._explored: set[str] = set()

    def __call__(self, observation: str, info: dict[str, Any]) -> str:
        task = info.get("task")
        if not isinstance(task, Task):
            raise ConfigurationError("the ALFWorld expert needs info['task'] (a Task with a goal and a room)")
        if task.id != self._task_id or self._house is None or observation == task.initial_state:
            self._start(task)
        else:
            self._observe(observation, info.get("admissible_actions"))
        if self._failures > MAX_FAILURES and info.get("admissible_actions"):
            actions = info["admissible_actions"]
            self._plan = []
            return self._issue(str(actions[self._failures % len(actions)]))
        if not self._plan:
            self._plan = self._make_plan()
        return self._issue(self._plan.pop(0))

    # -- belief --------------------------------------------------------------------------------
    def _start(self, task: Task) -> None:
        self.reset()
        world = world_of(task)
        self._task_id = task.id
        self._goal = Goal.of_task(task)
        self._check = GoalCheck(self._goal, world)
        self._house = Household(world, task.instruction)

    def _issue(self, action: str) -> str:
        command = parse_command(action)
        self._last = command if isinstance(command, Command) else None
        return action

    def _observe(self, observation: str, admissible: Any) -> None:
        house = self._house
        assert house is not None
        predicted = house.copy()
        if self._last is not None:
            predicted.apply(self._last)
        if self._last is not None and predicted.text == observation:
            self._house, self._failures = predicted, 0
            return
        self._plan = []
        if observation == NOTHING_HAPPENS:
            # Our command failed: the belief is wrong somewhere, most often about what we hold.
            self._failures += 1
            if self._failures <= MAX_FAILURES and self._last is not None and self._last.verb != "inventory":
                self._plan = ["inventory"]
        else:
            self._house = predicted  # our command most likely happened; then something else did
        self._correct(observation)
        if isinstance(admissible, list):
            self._correct_from(admissible)

    def _correct(self, text: str) -> None:
        """Set the belief to what an observation shows (every setter is idempotent)."""
        house = self._house
        assert house is not None
        if match := _ARRIVE.match(text):
            self._view(match.group(1))
        elif match := _OPEN.match(text):
            house.location = match.group(1)
            self._view(match.group(2))
        elif match := _VIEW.match(text):
            self._view(text)
        elif match := _CLOSE.match(text):
            house.location = match.group(1)
            house.opened.discard(match.group(1))
        elif match := _TAKE.match(text):
            house.location = match.group(2)
            self._hold(match.group(1))
        elif match := _PUT.match(text):
            obj, recep = match.groups()
            house.location = recep
            self._hold(obj)
            self._move(obj, recep)
            house.holding = None
        elif match := _PROCESS.match(text):
            verb, obj, recep = match.groups()
            house.location = recep
            self._hold(obj)
            house.give_state(obj, PROCESSES[verb])
        elif match := _TOGGLE.match(text):
            lamp = match.group(1)
            house.lamps_on.add(lamp)
            house.location = house.where.get(lamp) or house.location
        elif match := _CARRY.match(text):
            self._hold(match.group(1))
        elif text == "You are not carrying anything.":
            self._hold(None)
        elif match := _FACING.match(text):
            house.location = match.group(1)
        elif text.startswith("You are in the middle of a room."):
            house.location = None

    def _view(self, text: str) -> None:
        """A receptacle's view: its open/closed state and, if visible, exactly what it holds."""
        house = self._house
        assert house is not None
        match = _VIEW.match(text)
        if match is None:
            return
        on, on_items, closed, inside, in_items = match.groups()
        if closed:
            house.location = closed
            house.opened.discard(closed)
            return
        recep, items = (on, on_items) if on else (inside, in_items)
        house.location = recep  # the view is of the receptacle the agent stands at
        if inside:
            house.opened.add(inside)
        seen = [] if items == "nothing" else _ITEMS.findall(items)
        for obj in house.contents.get(recep, []):
            if obj not in seen:  # it was moved while we did not look
                self._lose(obj)
        house.contents[recep] = []
        for obj in seen:
            self._move(obj, recep)
        self._explored.add(recep)

    def _hold(self, obj: str | None) -> None:
        house = self._house
        assert house is not None
        if house.holding is not None and house.holding != obj:
            self._lose(house.holding)  # put down somewhere we did not see
        if obj is not None:
            self._move(obj, None)
        house.holding = obj

    def _move(self, obj: str, recep: str | None) -> None:
        house = self._house
        assert house is not None
        old = house.where.get(obj)
        if old is not None and obj in house.contents.get(old, []):
            house.contents[old].remove(obj)
        if house.holding == obj and recep is not None:
            house.holding = None
        house.where[obj] = recep
        if recep is not None:
            house.contents.setdefault(recep, []).append(obj)
        self._lost.discard(obj)

    def _lose(self, obj: str) -> None:
        """We do not know where ``obj`` is any more: search the room again when we need it."""
        assert self._house is not None
        self._house.where[obj] = None
        self._lost.add(obj)
        self._explored.clear()

    def _correct_from(self, admissible: list[Any]) -> None:
        house = self._house
        assert house is not None
        actions = {str(a) for a in admissible}
        here = [r for r in house.world.receptacles if f"examine {r}" in actions]
        house.location = here[0] if len(here) == 1 else None
        held = [a.split(" in/on ")[0][4:] for a in actions if a.startswith("put ")]
        if held:
            self._hold(held[0])
        elif any(a.startswith("take ") for a in actions):
            self._hold(None)

    # -- planning ------------------------------------------------------------------------------
    def _make_plan(self) -> list[str]:
        house, goal = self._house, self._goal
        assert house is not None and goal is not None
        planner = _Planner(house.copy(), goal, self._lost)
        plan = planner.plan()
        if plan is None:
            plan = planner.explore(self._explored)
        return plan or ["look"]


class _Planner:
    """Writes the commands that reach a goal from a belief, checking each on a copy of it."""

    def __init__(self, house: Household, goal: Goal, lost: set[str]) -> None:
        self.house, self.goal, self.lost = house, goal, lost
        self.commands: list[str] = []

    def do(self, text: str) -> None:
        command = parse_command(text)
        if not isinstance(command, Command) or not self.house.apply(command):
            raise _Unplannable(text)
        self.commands.append(text)

    def go(self, recep: str) -> None:
        if self.house.location != recep:
            self.do(f"go to {recep}")

    def reach(self, recep: str) -> None:
        """Go to a receptacle and open it if it is closed."""
        self.go(recep)
        if self.house.is_open(recep) is False:
            self.do(f"open {recep}")

    def plan(self) -> list[str] | None:
        """The commands that satisfy the goal, or ``None`` when a needed object is not where we know."""
        try:
            return self._plan()
        except _Unplannable:
            return None

    def _plan(self) -> list[str] | None:
        house, goal = self.house, self.goal
        world = house.world
        mine = [o for o in world.objects if kind_of(o) == goal.object_type]
        state = goal.needed_state
        target = None
        if goal.receptacle_type is not None:
            targets = world.of_kind(goal.receptacle_type)

            def ready_in(recep: str) -> int:
                return sum(
                    1
                    for o in house.contents[recep]
                    if o in mine and (state is None or state in house.states.get(o, ()))
                )

            target = max(targets, key=ready_in)  # first of the best: pick_two may have one there
            needed = goal.count - min(ready_in(target), goal.count)
        else:
            needed = 1
        for _ in range(needed):
            obj = self._fetch(mine, target)
            if obj is None:
                return None
            process = goal.process
            if process is not None and process.state not in house.states.get(obj, ()):
                tool = world.of_kind(process.tool)[0]
                self.go(tool)
                self.do(f"{process.verb} {obj} with {tool}")
            if goal.lamp_type is not None:
                lamp = world.of_kind(goal.lamp_type)[0]
                self.go(house.where[lamp] or "")
                if lamp not in house.lamps_on:
                    self.do(f"use {lamp}")
            else:
                assert target is not None
                self.reach(target)
                self.do(f"put {obj} in/on {target}")
        return self.commands

    def _fetch(self, mine: list[str], target: str | None) -> str | None:
        """Get an object of the goal's type in hand (not one already placed); ``None`` if none is known."""
        house = self.house
        if house.holding in mine and house.holding != target:
            return house.holding
        if house.holding is not None:
            self._drop()
        state = self.goal.needed_state
        # One already in the target counts only once it has the needed state (else fetch it too).
        known = [
            o
            for o in mine
            if house.where.get(o) is not None
            and (house.where[o] != target or (state is not None and state not in house.states.get(o, ())))
        ]
        if not known:
            return None
        # Fewest steps first: an object that already has the state, then one in plain sight.
        obj = min(
            known,
            key=lambda o: (
                state is not None and state not in house.states.get(o, ()),
                house.is_open(house.where[o] or "") is False,
            ),
        )
        recep = house.where[obj]
        assert recep is not None
        self.reach(recep)
        self.do(f"take {obj} from {recep}")
        return obj

    def _drop(self) -> None:
        house = self.house
        held = house.holding
        assert held is not None
        here = house.location

        def fits(recep: str | None) -> bool:
            return (
                recep is not None
                and house.is_open(recep) is not False
                and can_contain(kind_of(recep), kind_of(held))
            )

        if not fits(here):
            here = next((r for r in house.world.receptacles if fits(r)), None)
            if here is None:
                raise _Unplannable(f"put {held}")
            self.go(here)
        self.do(f"put {held} in/on {here}")

    def explore(self, explored: set[str]) -> list[str]:
        """Look into the next receptacle not seen since an object went missing."""
        for recep in self.house.world.receptacles:
            if recep not in explored:
                try:
                    self.reach(recep)
                except _Unplannable:
                    continue
                if self.commands:
                    return self.commands
                explored.add(recep)  # we stand at it and see in: nothing to do there
        explored.clear()
        return []


class _Unplannable(Exception):
    """A planned command is not valid in the belief."""
