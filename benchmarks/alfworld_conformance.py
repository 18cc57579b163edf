"""Does the ALFWorld reference env play as ALFWorld 0.3.5 does? An independent check, step by step.

ALFWorld 0.3.5 runs its games in TextWorld's PDDL env: ``alfworld/data/alfred.pddl`` says which
actions apply, ``alfworld/data/alfred.twl2`` what each prints, TextWorld's ``PddlEnv`` lists the
admissible commands as ``sorted(set(...))`` and answers any other text "Nothing happens.", and
ALFRED's tables in ``alfworld/gen/constants.py`` (written into each game's PDDL by
``scripts/augment_pddl_states.py``) say which objects are cleanable, heatable, ... and which
receptacle may hold which object (``canContain``). This script restates those rules on its own,
as PDDL facts, and reads ALFRED's tables straight from the alfworld repository at tag 0.3.5
(``git show``, parsed with ``ast``), not from the package. Then it plays expert, noisy-expert
and random episodes and, at every step, compares:

1. the env's admissible commands with the ones the rules give in the env's true state;
2. the env's observation with the feedback the grammar gives for the command (the reset's too);
3. the env's true state after the step with the rules' effects;
4. every listing the env prints with TextWorld's order (type ascending, number descending);
5. every object the env lets the agent put down with ALFRED's receptacle rules.

It also counts the starting placements and goals, over all 4,032 tasks, that ALFRED forbids.
With ``--placements-only`` it does only that count, which also runs on the code before this
check existed (the "before" numbers). Output: ``runs/conformance/alfworld_conformance.txt``.

Run: python benchmarks/alfworld_conformance.py [--tasks 504] [--alfworld-repo DIR] [--out FILE]
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ALFWORLD_TAG = "0.3.5"
DEFAULT_REPO = "/work/.mirror/alfworld+alfworld/repo"
BANNER = "-= Welcome to TextWorld, ALFRED! =-"
Policy = Callable[[str, dict[str, Any]], str]


# -- ALFRED's tables, read from the real repository ------------------------------------------------
@dataclass(frozen=True)
class AlfredTables:
    """Lower-case ALFRED type names (ALFWorld's Demangler lower-cases the PDDL ids)."""

    can_contain: dict[str, frozenset[str]]
    cleanable: frozenset[str]
    heatable: frozenset[str]
    coolable: frozenset[str]
    toggleable: frozenset[str]
    sliceable: frozenset[str]
    openable: frozenset[str]
    receptacle_objects: frozenset[str]


def read_tables(repo: str, tag: str = ALFWORLD_TAG) -> AlfredTables:
    """``VAL_RECEPTACLE_OBJECTS``, ``VAL_ACTION_OBJECTS``, ``OPENABLE_CLASS_LIST``, ``MOVABLE_RECEPTACLES``."""
    source = subprocess.run(
        ["git", "-C", repo, "show", f"{tag}:alfworld/gen/constants.py"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    literals: dict[str, Any] = {}
    aliases: dict[str, str] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                try:
                    literals[target.id] = ast.literal_eval(node.value)
                except ValueError:
                    continue
            elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                # VAL_RECEPTACLE_OBJECTS['DiningTable'] = VAL_RECEPTACLE_OBJECTS['TableTop']
                key, value = target.slice, node.value
                if (
                    isinstance(key, ast.Constant)
                    and isinstance(value, ast.Subscript)
                    and isinstance(value.slice, ast.Constant)
                ):
                    aliases[str(key.value)] = str(value.slice.value)
    receptacles = dict(literals["VAL_RECEPTACLE_OBJECTS"])
    for name, same_as in aliases.items():
        receptacles[name] = receptacles[same_as]
    receptacles.pop("TableTop", None)  # constants.py deletes it after aliasing the tables to it
    actions = literals["VAL_ACTION_OBJECTS"]

    def lower(names: Iterable[str]) -> frozenset[str]:
        return frozenset(n.lower() for n in names)

    return AlfredTables(
        can_contain={r.lower(): lower(objs) for r, objs in receptacles.items()},
        cleanable=lower(actions["Cleanable"]),
        heatable=lower(actions["Heatable"]),
        coolable=lower(actions["Coolable"]),
        toggleable=lower(actions["Toggleable"]),
        sliceable=lower(actions["Sliceable"]),
        openable=lower(literals["OPENABLE_CLASS_LIST"]),
        receptacle_objects=lower(literals["MOVABLE_RECEPTACLES"]),
    )


def type_of(name: str) -> str:
    return name.rpartition(" ")[0]


def number_of(name: str) -> int:
    return int(name.rpartition(" ")[2])


# -- the rules as PDDL facts ------------------------------------------------------------------------
@dataclass
class Facts:
    """One game state in alfred.pddl's predicates (each receptacle stands at its own location)."""

    receptacles: tuple[str, ...]
    at: str | None  # the receptacle whose location the agent is at; None: the start location
    in_receptacle: dict[str, str]  # object -> receptacle (inReceptacle, objectAtLocation)
    opened: set[str]
    holds: str | None
    clean: set[str] = field(default_factory=set)
    hot: set[str] = field(default_factory=set)
    cool: set[str] = field(default_factory=set)
    toggled: set[str] = field(default_factory=set)
    sliced: set[str] = field(default_factory=set)

    def objects_in(self, receptacle: str) -> list[str]:
        return [o for o, r in self.in_receptacle.items() if r == receptacle]


def facts_of(house: Any) -> Facts:
    """The env's true state (its Household) as facts."""
    states = {o: set(s) for o, s in house.states.items()}
    return Facts(
        receptacles=tuple(house.world.receptacles),
        at=house.location,
        in_receptacle={o: r for o, r in house.where.items() if r is not None},
        opened=set(house.opened),
        holds=house.holding,
        clean={o for o, s in states.items() if "clean" in s},
        hot={o for o, s in states.items() if "hot" in s},
        cool={o for o, s in states.items() if "cool" in s},
        toggled=set(house.lamps_on),
        sliced={o for o, s in states.items() if "sliced" in s},
    )


class Rules:
    """alfred.pddl's applicable actions and effects, alfred.twl2's feedback."""

    def __init__(
        self, tables: AlfredTables, location_number: Callable[[tuple[str, ...], str], int] | None
    ) -> None:
        self.t = tables
        self.location_number = location_number

    def accessible(self, f: Facts, r: str) -> bool:
        """``(or (not (openable ?r)) (opened ?r))``."""
        return type_of(r) not in self.t.openable or r in f.opened

    def actions(self, f: Facts) -> dict[str, tuple[str, ...]]:
        """Command -> the grounded action (name and arguments) it stands for."""
        t, out = self.t, {}
        out["look"] = ("look",)
        out["inventory"] = ("inventory",)
        for r in f.receptacles:  # GotoLocation: atLocation ?lStart, receptacleAtLocation ?r ?lEnd
            out[f"go to {r}"] = ("go", r)
        if f.holds is not None:
            out[f"examine {f.holds}"] = ("examine_object", f.holds)
        r = f.at
        if r is not None:
            out[f"examine {r}"] = ("examine_receptacle", r)
            if type_of(r) in t.openable:
                out[f"close {r}" if r in f.opened else f"open {r}"] = (
                    "close" if r in f.opened else "open",
                    r,
                )
            for o in f.objects_in(r):
                if type_of(o) in t.toggleable:
                    out[f"use {o}"] = ("toggle", o)
                if (
                    f.holds is not None
                    and type_of(f.holds) in ("knife", "butterknife")
                    and type_of(o) in t.sliceable
                ):
                    out[f"slice {o} with {f.holds}"] = ("slice", o, f.holds)  # objectAtLocation only
                if self.accessible(f, r):
                    out[f"examine {o}"] = ("examine_object", o)
                    if f.holds is None and type_of(o) not in t.toggleable:  # pickupable
                        out[f"take {o} from {r}"] = ("take", o, r)
            h = f.holds
            if h is not None:
                if self.accessible(f, r) and type_of(h) in t.can_contain.get(type_of(r), ()):
                    out[f"put {h} in/on {r}"] = ("put", h, r)
                for verb, tool, able in (
                    ("clean", "sinkbasin", t.cleanable),
                    ("heat", "microwave", t.heatable),
                    ("cool", "fridge", t.coolable),
                ):
                    if type_of(r) == tool and type_of(h) in able:
                        out[f"{verb} {h} with {r}"] = (verb, h, r)
        return out

    def admissible(self, f: Facts) -> list[str]:
        """TextWorld's PddlEnv: ``sorted(set(commands))``."""
        return sorted(set(self.actions(f)))

    def apply(self, f: Facts, action: tuple[str, ...]) -> None:
        name, *args = action
        if name == "go":
            f.at = args[0]
        elif name == "open":
            f.opened.add(args[0])
        elif name == "close":
            f.opened.discard(args[0])
        elif name == "take":
            del f.in_receptacle[args[0]]
            f.holds = args[0]
        elif name == "put":
            f.in_receptacle[args[0]] = args[1]
            f.holds = None
        elif name == "clean":
            f.clean.add(args[0])
        elif name == "heat":
            f.hot.add(args[0])
            f.cool.discard(args[0])
        elif name == "cool":
            f.cool.add(args[0])
            f.hot.discard(args[0])
        elif name == "toggle":
            f.toggled.add(args[0])
        elif name == "slice":
            f.sliced.add(args[0])

    # -- alfred.twl2 ----------------------------------------------------------------------------------
    @staticmethod
    def listing(names: Iterable[str]) -> str:
        """A ``[...]`` list: TextWorld walks sorted facts (ids), and the Demangler numbers a type's
        sorted ids from the highest down; "a" is every entity's indefinite article."""
        items = [f"a {n}" for n in sorted(names, key=lambda n: (type_of(n), -number_of(n)))]
        if not items:
            return "nothing"
        return items[0] if len(items) == 1 else ", ".join(items[:-1]) + ", and " + items[-1]

    def examine_receptacle(self, f: Facts, r: str) -> str:
        if type_of(r) in self.t.openable:
            if r in f.opened:
                return f"The {r} is open. In it, you see {self.listing(f.objects_in(r))}."
            return f"The {r} is closed."
        return f"On the {r}, you see {self.listing(f.objects_in(r))}."

    def examine_object(self, f: Facts, o: str) -> str:
        clean, hot, cool, sliced = o in f.clean, o in f.hot, o in f.cool, o in f.sliced
        rules = (
            (type_of(o) in self.t.receptacle_objects, f"This is a normal {o}. In it, you see nothing."),
            (clean and hot and sliced, f"This is a hot and clean sliced {o}."),
            (clean and cool and sliced, f"This is a cool and clean sliced {o}."),
            (clean and sliced, f"This is a clean sliced {o}."),
            (hot and sliced, f"This is a hot sliced {o}."),
            (cool and sliced, f"This is a cool sliced {o}."),
            (clean and hot, f"This is a hot and clean {o}."),
            (clean and cool, f"This is a cool and clean {o}."),
            (hot, f"This is a hot {o}."),
            (clean, f"This is a clean {o}."),
            (cool, f"This is a cold {o}."),
            (type_of(o) in self.t.toggleable and o in f.toggled, f"This {o} is on."),
            # "This {o} is off." needs not_istoggled: TextWorld's PddlState drops negated atoms
            # of the initial state and no action deletes isToggled, so that fact never exists
            (sliced, f"This is a sliced {o}."),
        )
        return next((text for holds, text in rules if holds), f"There's nothing special about {o}.")

    def look(self, f: Facts, bound: bool) -> str:
        if f.at is not None:
            # list_objects_on_the_floor: objects at the location but not in its receptacle; every
            # object here is in one, and each receptacle has its own location, so there are none
            return f"You are facing the {f.at}. Next to it, you see nothing."
        # the intro binds nothing, so list_appliances names every receptacle; the look action binds
        # the agent's location, where no receptacle stands
        return f"You are in the middle of a room. Looking quickly around you, you see {self.listing(() if bound else f.receptacles)}."

    def intro(self, f: Facts, instruction: str) -> str:
        return f"{BANNER}\n\n{self.look(f, bound=False)}\n\nYour task is to: {instruction}"

    def feedback(self, f: Facts, action: tuple[str, ...]) -> str:
        """The text of ``action`` in the state after it (TextWorld derives feedback after apply)."""
        name, *args = action
        if name == "go":
            number = self.location_number(f.receptacles, args[0]) if self.location_number else "?"
            return f"You arrive at loc {number}. {self.examine_receptacle(f, args[0])}"
        if name == "open":
            return f"You open the {args[0]}. {self.examine_receptacle(f, args[0])}"
        if name == "close":
            return f"You close the {args[0]}."
        if name == "take":
            return f"You pick up the {args[0]} from the {args[1]}."
        if name == "put":
            return f"You put the {args[0]} in/on the {args[1]}."
        if name in ("clean", "heat", "cool"):
            return f"You {name} the {args[0]} using the {args[1]}."
        if name == "toggle":  # toggleable & istoggled holds after the action, always
            return f"You turn on the {args[0]}."
        if name == "slice":
            return f"You sliced the {args[0]} with the {args[1]}."
        if name == "inventory":
            return f"You are carrying: a {f.holds}." if f.holds else "You are not carrying anything."
        if name == "examine_receptacle":
            return self.examine_receptacle(f, args[0])
        if name == "examine_object":
            return self.examine_object(f, args[0])
        return self.look(f, bound=True)


# -- playing ----------------------------------------------------------------------------------------
_LIST = re.compile(r"you see (.+?)\.(?:\n|$)")
_PUT = re.compile(r"You put the ([a-z]+ \d+) in/on the ([a-z]+ \d+)\.")


def listing_in_order(text: str) -> tuple[int, int]:
    """(lists checked, lists out of TextWorld's order) in one observation."""
    checked = bad = 0
    for match in _LIST.finditer(text):
        body = match.group(1)
        if body == "nothing":
            continue
        names = [item.removeprefix("a ") for item in re.split(r", and |, ", body)]
        keys = [(type_of(n), -number_of(n)) for n in names]
        checked += 1
        bad += keys != sorted(keys)
    return checked, bad


@dataclass
class Tally:
    steps: int = 0
    admissible_equal: int = 0
    feedback_equal: int = 0
    state_equal: int = 0
    resets: int = 0
    resets_equal: int = 0
    lists: int = 0
    lists_out_of_order: int = 0
    puts: int = 0
    illegal_puts: int = 0
    examples: list[str] = field(default_factory=list)

    def note(self, text: str) -> None:
        if len(self.examples) < 8:
            self.examples.append(text)


NEAR_MISSES: tuple[Callable[[str], str], ...] = (
    str.capitalize,  # "Go to cabinet 1"
    lambda c: c + ".",
    lambda c: c.replace(" in/on ", " in "),  # the wording ReAct's prompts and agents often use
    lambda c: c.replace("put ", "move ").replace(" in/on ", " to "),  # ALFWorld 0.4's wording
    lambda c: c.replace("use ", "toggle "),
    lambda c: c.replace(" ", "  ", 1),
    lambda c: f"  {c}\n",  # TextWorld strips: this one is valid
)


def random_policy(seed: int, near_misses: float = 0.0) -> Policy:
    """A random admissible command; with probability ``near_misses`` one rewritten as agents misspell them."""
    rng = np.random.default_rng(seed)

    def act(observation: str, info: dict[str, Any]) -> str:
        actions = info["admissible_actions"]
        command = str(actions[int(rng.integers(len(actions)))])
        if rng.random() < near_misses:
            command = NEAR_MISSES[int(rng.integers(len(NEAR_MISSES)))](command)
        return command

    return act


def noisy_expert(epsilon: float, seed: int) -> Policy:
    from dreamgym_env.envs.alfworld.expert import ALFWorldExpert

    expert, rng, rand = ALFWorldExpert(), np.random.default_rng(seed), random_policy(seed + 1)

    def act(observation: str, info: dict[str, Any]) -> str:
        return rand(observation, info) if rng.random() < epsilon else expert(observation, info)

    return act


def play(env: Any, rules: Rules, policy: Policy, tasks: list[Any], horizon: int, tally: Tally) -> None:
    for task in tasks:
        obs, info = env.reset(options={"task": task})
        facts = facts_of(env.house)
        tally.resets += 1
        if obs == rules.intro(facts, task.instruction):
            tally.resets_equal += 1
        else:
            tally.note(f"reset {task.id}: {obs[:120]!r}")
        for _ in range(horizon):
            facts = facts_of(env.house)
            mine = rules.actions(facts)
            tally.steps += 1
            if info["admissible_actions"] == sorted(set(mine)):
                tally.admissible_equal += 1
            else:
                extra = sorted(set(info["admissible_actions"]) - set(mine))[:3]
                missing = sorted(set(mine) - set(info["admissible_actions"]))[:3]
                tally.note(f"admissible {task.id}: env extra {extra}, rules extra {missing}")
            action = policy(obs, info)
            grounded = mine.get(action.strip())
            if grounded is not None:
                rules.apply(facts, grounded)
                expected = rules.feedback(facts, grounded)
            else:
                expected = "Nothing happens."
            obs, _, terminated, _, info = env.step(action)
            tally.feedback_equal += obs == expected
            if obs != expected:
                tally.note(f"feedback {task.id} {action!r}: env {obs[:90]!r}, rules {expected[:90]!r}")
            after = facts_of(env.house)
            same = (
                after.at,
                after.in_receptacle,
                after.opened,
                after.holds,
                after.clean,
                after.hot,
                after.cool,
            ) == (
                facts.at,
                facts.in_receptacle,
                facts.opened,
                facts.holds,
                facts.clean,
                facts.hot,
                facts.cool,
            ) and (after.toggled, after.sliced) == (facts.toggled, facts.sliced)
            tally.state_equal += same
            checked, bad = listing_in_order(obs)
            tally.lists += checked
            tally.lists_out_of_order += bad
            if put := _PUT.fullmatch(obs):  # what the env let happen, whatever the rules say
                tally.puts += 1
                obj, recep = put.groups()
                tally.illegal_puts += type_of(obj) not in rules.t.can_contain.get(type_of(recep), ())
            if terminated:
                break


def placement_counts(tables: AlfredTables) -> dict[str, int]:
    """Starting placements and goals, over all tasks, that ALFRED's canContain forbids."""
    from dreamgym_env.envs.alfworld.tasks import load_tasks, world_of

    tasks = load_tasks()
    everything = [*tasks.train, *tasks.test]
    worlds = {(t.metadata["scene"], t.metadata["world_seed"]): world_of(t) for t in everything}
    placements = illegal_placements = 0
    forbidden: Counter[str] = Counter()
    for world in worlds.values():
        for obj, recep in world.placement:
            if type_of(obj) in tables.toggleable:  # lamps are fixtures: never picked up or put
                continue
            placements += 1
            if type_of(obj) not in tables.can_contain.get(type_of(recep), ()):
                illegal_placements += 1
                forbidden[f"{type_of(obj)} in {type_of(recep)}"] += 1
    goals = illegal_goals = 0
    for task in everything:
        goal = task.metadata["goal"]
        if goal["receptacle_type"] is None:
            continue
        goals += 1
        illegal_goals += goal["object_type"] not in tables.can_contain.get(goal["receptacle_type"], ())
    return {
        "tasks": len(everything),
        "rooms": len(worlds),
        "starting placements": placements,
        "forbidden starting placements": illegal_placements,
        "goals with a target": goals,
        "forbidden goals": illegal_goals,
        **{f"  e.g. {pair}": n for pair, n in forbidden.most_common(3)},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=504, help="test tasks per policy")
    parser.add_argument("--horizon", type=int, default=50)
    parser.add_argument("--epsilon", type=float, default=0.3)
    parser.add_argument(
        "--alfworld-repo", default=DEFAULT_REPO, help="a clone of github.com/alfworld/alfworld"
    )
    parser.add_argument(
        "--placements-only", action="store_true", help="only count forbidden placements and goals"
    )
    parser.add_argument("--out", type=Path, default=Path("runs/conformance/alfworld_conformance.txt"))
    args = parser.parse_args()

    tables = read_tables(args.alfworld_repo)
    import dreamgym_env

    package = Path(dreamgym_env.__file__).resolve().parent
    commit = subprocess.run(
        ["git", "-C", str(package), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    lines = [
        f"ALFWorld conformance against alfworld {ALFWORLD_TAG} (alfred.pddl, alfred.twl2, gen/constants.py)",
        f"code checked: {package} at commit {commit or 'unknown'} (uncommitted changes count too)",
    ]
    lines += [f"{name}: {value:,}" for name, value in placement_counts(tables).items()]
    if not args.placements_only:
        from dreamgym_env.envs.alfworld import state
        from dreamgym_env.envs.alfworld.expert import ALFWorldExpert
        from dreamgym_env.envs.alfworld.reference_env import ALFWorldRefEnv

        env = ALFWorldRefEnv(split="test")
        tasks = list(env.tasks[: args.tasks])
        # "loc N" numbers are the env's (ALFWorld's come from its game files); code without them prints "?"
        numbers = getattr(state, "location_numbers", None)
        rules = Rules(tables, None if numbers is None else lambda receptacles, r: numbers(receptacles)[r])
        policies: dict[str, Policy] = {
            "expert": ALFWorldExpert(),
            f"noisy expert (epsilon {args.epsilon})": noisy_expert(args.epsilon, 0),
            "random": random_policy(0),
            "random, 20 % near-miss wordings": random_policy(1, near_misses=0.2),
        }
        total = Tally()
        started = time.process_time()
        for name, policy in policies.items():
            tally = Tally()
            play(env, rules, policy, tasks, args.horizon, tally)
            lines.append(
                f"{name}: {tally.steps:,} steps, admissible equal {tally.admissible_equal / tally.steps:.4f}, "
                f"feedback equal {tally.feedback_equal / tally.steps:.4f}, state equal "
                f"{tally.state_equal / tally.steps:.4f}, resets equal {tally.resets_equal}/{tally.resets}"
            )
            for key in vars(total):
                if key == "examples":
                    total.examples += tally.examples
                else:
                    setattr(total, key, getattr(total, key) + getattr(tally, key))
        lines += [
            f"all: {total.steps:,} steps; admissible sets equal to the rules' on {total.admissible_equal:,} "
            f"({total.admissible_equal / total.steps:.4f}); feedback equal on {total.feedback_equal:,} "
            f"({total.feedback_equal / total.steps:.4f}); next state equal on {total.state_equal:,} "
            f"({total.state_equal / total.steps:.4f}); first observations equal {total.resets_equal}/{total.resets}",
            f"listings checked: {total.lists:,}, out of TextWorld's order: {total.lists_out_of_order:,}",
            f"objects put down: {total.puts:,}, where ALFRED forbids: {total.illegal_puts:,}",
            f"check time: {time.process_time() - started:.1f} s CPU",
            *(f"  differs: {example}" for example in total.examples[:8]),
        ]
    text = "\n".join(lines)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
