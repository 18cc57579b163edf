"""The simulation core: one episode's room, changed by ALFWorld's commands.

:class:`Household` holds the true state (where each object is, what is open, what the agent
carries, object states, lamps) and what the agent has seen, applies a
:class:`~dreamgym_env.envs.alfworld.grammar.Command` with ALFWorld's semantics, and keeps the
observation text and the admissible commands of the result. The reference env, its replay and
the expert's planner all run on it.

Semantics (alfworld 0.3.5's ``alfworld/data/alfred.pddl``, texts from ``alfred.twl2``): the
agent carries at most one object; it must be at a receptacle to open, close, take from, put in
or use what is there; contents of a closed receptacle are hidden and out of reach; ``put``
needs ALFRED's ``canContain`` (:func:`~dreamgym_env.envs.alfworld.world.can_contain`);
``clean`` needs a sinkbasin, ``heat`` a microwave, ``cool`` a fridge (at the agent's location,
closed or not, holding an object that can take the state); heat and cool undo each other;
``use`` toggles a lamp at the location for good (ToggleObject sets ``isToggled``, so its
feedback is always "You turn on"); ``slice`` needs a knife in hand and a sliceable object at
the location, even in a closed receptacle. Anything else is ``Nothing happens.`` and changes nothing.
"""

from __future__ import annotations

from dreamgym_env.envs.alfworld.grammar import Command
from dreamgym_env.envs.alfworld.state import (
    NOTHING_HAPPENS,
    STATE_ORDER,
    ALFWorldState,
    Event,
    admissible_commands,
    arrive_text,
    describe,
    examine_text,
    inventory_text,
    look_text,
    start_text,
)
from dreamgym_env.envs.alfworld.world import (
    KNIVES,
    LAMPS,
    OPENABLE,
    PROCESSES,
    SLICEABLE,
    Process,
    World,
    can_contain,
    kind_of,
)


class Household:
    """The mutable state of one room during an episode (see the module docstring).

    Attributes:
        location: the receptacle the agent is at (``None``: the middle of the room).
        where: object -> its receptacle (``None`` while carried).
        contents: receptacle -> its objects, in listing order.
        opened: the open receptacles.
        holding: the carried object, if any.
        states: object -> its states among ``clean``, ``hot``, ``cool``, ``sliced``.
        lamps_on: the lamps that are on.
        seen: receptacle -> the objects the agent last saw in or on it.
        text: the observation of the last command (or the start).
    """

    def __init__(self, world: World, instruction: str = "") -> None:
        self.world = world
        self.instruction = instruction
        self.receptacle_set = frozenset(world.receptacles)
        self.location: str | None = None
        self.where: dict[str, str | None] = dict(world.placement)
        self.contents: dict[str, list[str]] = world.contents()
        self.opened: set[str] = set()
        self.holding: str | None = None
        self.states: dict[str, set[str]] = {}
        self.lamps_on: set[str] = set()
        self.seen: dict[str, tuple[str, ...]] = {}
        self.event: Event = "start"
        self.feedback = ""
        self.text = start_text(world.receptacles, instruction)

    def copy(self) -> Household:
        """An independent copy (the expert plans on one)."""
        other = Household.__new__(Household)
        other.__dict__.update(self.__dict__)
        other.where = dict(self.where)
        other.contents = {r: list(objs) for r, objs in self.contents.items()}
        other.opened = set(self.opened)
        other.states = {o: set(s) for o, s in self.states.items()}
        other.lamps_on = set(self.lamps_on)
        other.seen = dict(self.seen)
        return other

    # -- queries -----------------------------------------------------------------------------
    def is_open(self, receptacle: str) -> bool | None:
        """Open/closed for an openable receptacle, ``None`` for one that cannot be opened."""
        return receptacle in self.opened if kind_of(receptacle) in OPENABLE else None

    def visible(self) -> tuple[str, ...]:
        """What the agent sees at its location (nothing in the middle of the room or at a closed one)."""
        location = self.location
        if location is None or self.is_open(location) is False:
            return ()
        return tuple(self.contents[location])

    def admissible(self) -> tuple[str, ...]:
        location = self.location
        return admissible_commands(
            self.world.receptacles,
            location,
            None if location is None else self.is_open(location),
            () if location is None else tuple(self.contents[location]),
            self.holding,
        )

    def abstract_state(self) -> ALFWorldState:
        """What the agent knows now, as :class:`ALFWorldState` (its render is :attr:`text`)."""
        location = self.location
        return ALFWorldState(
            instruction=self.instruction,
            receptacles=list(self.world.receptacles),
            location=location,
            is_open=None if location is None else self.is_open(location),
            seen={r: list(objs) for r, objs in self.seen.items()},
            inventory=[self.holding] if self.holding else [],
            object_states={
                o: [s for s in STATE_ORDER if s in st] for o, st in sorted(self.states.items()) if st
            },
            lamps_on=sorted(self.lamps_on),
            event=self.event,
            feedback=self.feedback if self.event == "message" else "",
        )

    # -- transitions -------------------------------------------------------------------------
    def apply(self, command: Command) -> bool:
        """Apply ``command``; returns whether it was valid (else ``Nothing happens.``, no change)."""
        handler = getattr(self, f"_do_{command.verb}", None)
        valid = handler is not None and handler(command)
        if not valid:
            self.nothing_happens()
        return bool(valid)

    def nothing_happens(self) -> None:
        """The outcome of an invalid command: ALFWorld's ``Nothing happens.``, no change."""
        self._message(NOTHING_HAPPENS)

    def _message(self, text: str) -> None:
        self.event, self.feedback, self.text = "message", text, text

    def _look_here(self, event: Event) -> None:
        location = self.location
        assert location is not None
        is_open = self.is_open(location)
        if is_open is not False:
            self.seen[location] = tuple(self.contents[location])
        seen = self.seen.get(location, ())
        if event == "arrive":
            text = arrive_text(self.world.receptacles, location, is_open, seen)
        else:
            text = describe(location, is_open, seen)
            if event == "open":
                text = f"You open the {location}. {text}"
        self.event, self.feedback, self.text = event, "", text

    def _do_go(self, c: Command) -> bool:
        if c.recep not in self.receptacle_set:  # GotoLocation allows the current location too
            return False
        self.location = c.recep
        self._look_here("arrive")
        return True

    def _do_open(self, c: Command) -> bool:
        recep = c.recep
        if recep is None or recep != self.location or self.is_open(recep) is not False:
            return False
        self.opened.add(recep)
        self._look_here("open")
        return True

    def _do_close(self, c: Command) -> bool:
        recep = c.recep
        if recep is None or recep != self.location or not self.is_open(recep):
            return False
        self.opened.discard(recep)
        self._message(f"You close the {recep}.")
        return True

    def _do_take(self, c: Command) -> bool:
        obj, recep = c.obj, c.recep
        if obj is None or recep is None or self.holding is not None or recep != self.location:
            return False
        if kind_of(obj) in LAMPS or obj not in self.visible():
            return False
        self.contents[recep].remove(obj)
        self.where[obj], self.holding = None, obj
        self.seen[recep] = tuple(self.contents[recep])
        self._message(f"You pick up the {obj} from the {recep}.")
        return True

    def _do_put(self, c: Command) -> bool:
        obj, recep = c.obj, c.recep
        if obj is None or recep is None or obj != self.holding or recep != self.location:
            return False
        if self.is_open(recep) is False or not can_contain(kind_of(recep), kind_of(obj)):
            return False
        self.contents[recep].append(obj)
        self.where[obj], self.holding = recep, None
        self.seen[recep] = tuple(self.contents[recep])
        self._message(f"You put the {obj} in/on the {recep}.")
        return True

    def _process(self, c: Command) -> bool:
        process = PROCESSES[c.verb]
        obj, recep = c.obj, c.recep
        if obj is None or recep is None or obj != self.holding or recep != self.location:
            return False
        if kind_of(recep) != process.tool or kind_of(obj) not in process.objects:
            return False
        self.give_state(obj, process)
        self._message(f"You {c.verb} the {obj} using the {c.recep}.")
        return True

    _do_clean = _do_heat = _do_cool = _process

    def give_state(self, obj: str, process: Process) -> None:
        """Give ``obj`` the state ``process`` gives (and take away the one it undoes)."""
        states = self.states.setdefault(obj, set())
        states.add(process.state)
        states.discard(process.undoes or "")

    def _do_use(self, c: Command) -> bool:
        lamp, location = c.obj, self.location
        if (
            lamp is None
            or location is None
            or kind_of(lamp) not in LAMPS
            or lamp not in self.contents[location]
        ):
            return False
        self.lamps_on.add(lamp)
        self._message(f"You turn on the {lamp}.")
        return True

    def _do_slice(self, c: Command) -> bool:
        obj, knife, location = c.obj, c.recep, self.location
        if obj is None or knife is None or location is None or knife != self.holding:
            return False
        if (
            kind_of(knife) not in KNIVES
            or kind_of(obj) not in SLICEABLE
            or obj not in self.contents[location]
        ):
            return False
        self.states.setdefault(obj, set()).add("sliced")
        self._message(f"You sliced the {obj} with the {knife}.")
        return True

    def _do_examine(self, c: Command) -> bool:
        name = c.obj
        if name is not None and name == self.location:
            self._look_here("examine")
            return True
        if name is None or (name != self.holding and name not in self.visible()):
            return False
        states = [s for s in STATE_ORDER if s in self.states.get(name, ())]
        self._message(examine_text(name, states, name in self.lamps_on))
        return True

    def _do_inventory(self, c: Command) -> bool:
        self.event, self.feedback = "inventory", ""
        self.text = inventory_text([self.holding] if self.holding else [])
        return True

    def _do_look(self, c: Command) -> bool:
        self.event, self.feedback = "look", ""
        self.text = look_text(self.location)
        return True
