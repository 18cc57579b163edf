"""Seeded household worlds in the style of ALFWorld: one room, numbered receptacles and objects.

A :class:`World` is the initial layout of one room: its receptacles (``cabinet 1``,
``countertop 1``, ...) in the order the room lists them, and where each object starts
(``apple 1`` on ``countertop 1``). It is plain data, rebuilt deterministically from
``(scene, seed)`` by :func:`make_world` and cached per process by :func:`load_world`. The
vocabulary follows ALFWorld (ALFRED's object and receptacle classes, lower case, no spaces).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from dreamgym_env.errors import ConfigurationError, UnknownNameError

SCENES = ("kitchen", "bedroom", "bathroom", "livingroom")
OPENABLE = frozenset({"cabinet", "drawer", "fridge", "microwave", "safe"})
"""Receptacle types that start closed; their contents are hidden until opened (ALFRED's
``OPENABLE_CLASS_LIST`` in ``alfworld/gen/constants.py``, without the box, which is an object here)."""
LAMPS = frozenset({"desklamp", "floorlamp"})
"""Object types that can be toggled (``use desklamp 1``) and cannot be picked up (ALFRED's ``Toggleable``)."""

# ALFRED's action tables (``VAL_ACTION_OBJECTS`` in alfworld 0.3.5's ``alfworld/gen/constants.py``,
# lower case, without the *Sliced types that ALFWorld's text games leave out); alfworld's
# ``scripts/augment_pddl_states.py`` writes them into each game's PDDL as cleanable/heatable/... facts.
CLEANABLE = frozenset(
    [
        "apple",
        "bowl",
        "butterknife",
        "cloth",
        "cup",
        "dishsponge",
        "egg",
        "fork",
        "kettle",
        "knife",
        "ladle",
        "lettuce",
        "mug",
        "pan",
        "plate",
        "pot",
        "potato",
        "soapbar",
        "spatula",
        "spoon",
        "tomato",
    ]
)
HEATABLE = frozenset(["apple", "bread", "cup", "egg", "mug", "plate", "potato", "tomato"])
COOLABLE = frozenset(
    [
        "apple",
        "bowl",
        "bread",
        "cup",
        "egg",
        "lettuce",
        "mug",
        "pan",
        "plate",
        "pot",
        "potato",
        "tomato",
        "winebottle",
    ]
)
SLICEABLE = frozenset(["apple", "bread", "egg", "lettuce", "potato", "tomato"])
KNIVES = frozenset({"knife", "butterknife"})
"""What ``slice X with Y`` needs in hand (alfred.pddl's SliceObject: KnifeType or ButterKnifeType)."""
RECEPTACLE_OBJECTS = frozenset(["bowl", "box", "cup", "mug", "plate", "pan", "pot"])
"""ALFRED's movable receptacles: the PDDL marks them ``isReceptacleObject``, so examining one
prints ``This is a normal mug 1. In it, you see nothing.``"""
CAN_CONTAIN: dict[str, frozenset[str]] = {
    recep: frozenset(objects.split())
    for recep, objects in {
        "armchair": "basketball book box cellphone cloth creditcard keychain laptop newspaper pillow remotecontrol",
        "bathtubbasin": "cloth dishsponge handtowel soapbar",
        "bed": "baseballbat basketball book cellphone laptop newspaper pillow tennisracket",
        "cabinet": "book bowl box candle cd cloth cup dishsponge glassbottle handtowel kettle ladle mug newspaper "
        "pan peppershaker plate plunger pot saltshaker soapbar soapbottle spraybottle tissuebox toiletpaper "
        "toiletpaperroll vase wateringcan winebottle",
        "coffeemachine": "mug",
        "desk": "alarmclock basketball book bowl box candle cd cellphone cloth creditcard cup glassbottle keychain "
        "laptop mug newspaper pen pencil plate remotecontrol soapbottle spraybottle statue tennisracket tissuebox "
        "toiletpaper toiletpaperroll vase watch wateringcan winebottle",
        "drawer": "book butterknife candle cd cellphone cloth creditcard dishsponge fork handtowel keychain knife "
        "ladle newspaper pen pencil peppershaker remotecontrol saltshaker soapbar soapbottle spatula spoon "
        "spraybottle tissuebox toiletpaper toiletpaperroll watch wateringcan",
        "dresser": "alarmclock basketball book bowl box candle cd cellphone cloth creditcard cup glassbottle "
        "keychain laptop mug newspaper pen pencil plate remotecontrol spraybottle statue tennisracket tissuebox "
        "toiletpaper toiletpaperroll vase watch wateringcan winebottle",
        "fridge": "apple bowl bread cup egg glassbottle lettuce mug pan plate pot potato tomato winebottle",
        "garbagecan": "apple bread cd cloth dishsponge egg handtowel lettuce newspaper papertowel pen pencil potato "
        "soapbar soapbottle spraybottle tissuebox toiletpaper toiletpaperroll tomato winebottle",
        "handtowelholder": "handtowel",
        "laundryhamper": "cloth",
        "microwave": "apple bowl bread cup egg glassbottle mug plate potato tomato",
        "ottoman": "basketball book box cellphone cloth creditcard keychain laptop newspaper pillow remotecontrol",
        "safe": "cd cellphone creditcard keychain statue vase watch",
        "shelf": "alarmclock book bowl box candle cd cellphone cloth creditcard cup dishsponge glassbottle handtowel "
        "kettle keychain mug newspaper papertowel pen pencil peppershaker plate pot remotecontrol saltshaker "
        "soapbar soapbottle spraybottle statue tissuebox toiletpaper toiletpaperroll vase watch wateringcan "
        "winebottle",
        "sinkbasin": "apple bowl butterknife cloth cup dishsponge egg fork glassbottle handtowel kettle knife ladle "
        "lettuce mug pan plate pot potato soapbar spatula spoon tomato",
        "sofa": "basketball book box cellphone cloth creditcard keychain laptop newspaper pillow remotecontrol",
        "stoveburner": "kettle pan pot",
        "toaster": "",
        "toilet": "candle cloth dishsponge handtowel newspaper papertowel soapbar soapbottle spraybottle tissuebox "
        "toiletpaper toiletpaperroll",
        "toiletpaperhanger": "toiletpaper toiletpaperroll",
        "towelholder": "towel",
        "tvstand": "tissuebox",
    }.items()
}
"""Receptacle type -> the object types ALFRED lets it hold (``VAL_RECEPTACLE_OBJECTS`` in
``alfworld/gen/constants.py``, lower case, without *Sliced types; the toaster holds only
BreadSliced there, so nothing here). ``augment_pddl_states.py`` turns it into the PDDL's
``canContain`` facts, which alfred.pddl's PutObject requires."""
_TABLE_TOP = (
    "alarmclock apple baseballbat basketball book bowl box bread butterknife candle cd cellphone cloth "
    "creditcard cup dishsponge egg fork glassbottle handtowel kettle keychain knife ladle laptop lettuce mug "
    "newspaper pan papertowel pen pencil peppershaker plate pot potato remotecontrol saltshaker soapbar "
    "soapbottle spatula spoon spraybottle statue tennisracket tissuebox toiletpaper toiletpaperroll tomato vase "
    "watch wateringcan winebottle"
)
for _table in ("coffeetable", "countertop", "diningtable", "sidetable"):  # ALFRED's TableTop entry
    CAN_CONTAIN[_table] = frozenset(_TABLE_TOP.split())


def can_contain(receptacle_type: str, object_type: str) -> bool:
    """Whether ALFRED lets a receptacle of this type hold an object of this type (:data:`CAN_CONTAIN`)."""
    return object_type in CAN_CONTAIN.get(receptacle_type, ())


@dataclass(frozen=True)
class Process:
    """``clean``, ``heat`` or ``cool``: alfred.pddl's CleanObject, HeatObject and CoolObject."""

    verb: str
    tool: str
    """The receptacle type it needs at the agent's location."""
    objects: frozenset[str]
    """The object types it applies to."""
    state: str
    """The state it gives the object."""
    undoes: str | None
    """The state it takes away (heat and cool undo each other)."""


PROCESSES = {
    process.verb: process
    for process in (
        Process("clean", "sinkbasin", CLEANABLE, "clean", None),
        Process("heat", "microwave", HEATABLE, "hot", "cool"),
        Process("cool", "fridge", COOLABLE, "cool", "hot"),
    )
}
"""Verb -> its :class:`Process`."""

# Receptacle type -> (min, max) count, per scene; ALFWorld's rooms have 15 to 40 receptacles.
_RECEPTACLES: dict[str, dict[str, tuple[int, int]]] = {
    "kitchen": {
        "cabinet": (4, 12),
        "coffeemachine": (1, 1),
        "countertop": (1, 3),
        "diningtable": (0, 1),
        "drawer": (2, 8),
        "fridge": (1, 1),
        "garbagecan": (1, 1),
        "microwave": (1, 1),
        "shelf": (0, 3),
        "sinkbasin": (1, 1),
        "stoveburner": (4, 4),
        "toaster": (1, 1),
    },
    "bedroom": {
        "armchair": (0, 1),
        "bed": (1, 1),
        "desk": (0, 2),
        "drawer": (2, 8),
        "dresser": (0, 1),
        "garbagecan": (1, 1),
        "laundryhamper": (0, 1),
        "safe": (0, 1),
        "shelf": (1, 6),
        "sidetable": (1, 2),
    },
    "bathroom": {
        "bathtubbasin": (0, 1),
        "cabinet": (2, 4),
        "countertop": (1, 1),
        "drawer": (0, 4),
        "garbagecan": (1, 1),
        "handtowelholder": (1, 1),
        "shelf": (0, 2),
        "sinkbasin": (1, 2),
        "toilet": (1, 1),
        "toiletpaperhanger": (1, 1),
        "towelholder": (1, 1),
    },
    "livingroom": {
        "armchair": (1, 2),
        "cabinet": (1, 4),
        "coffeetable": (1, 1),
        "diningtable": (0, 1),
        "drawer": (2, 6),
        "dresser": (0, 1),
        "garbagecan": (1, 1),
        "safe": (0, 1),
        "shelf": (1, 6),
        "sidetable": (1, 3),
        "sofa": (1, 1),
        "tvstand": (0, 1),
    },
}

# Where each type starts and may be put: only receptacle types that ALFRED lets hold it (CAN_CONTAIN).
_FOOD = ("countertop", "diningtable", "fridge", "garbagecan", "microwave", "sinkbasin")
_DISH = ("cabinet", "countertop", "diningtable", "fridge", "microwave", "shelf", "sinkbasin")
_UTENSIL = ("countertop", "diningtable", "drawer", "sinkbasin")
_COOKWARE = ("cabinet", "countertop", "diningtable", "fridge", "sinkbasin", "stoveburner")
_SMALL = ("coffeetable", "desk", "diningtable", "drawer", "dresser", "shelf", "sidetable")
_DECOR = ("cabinet", "coffeetable", "desk", "diningtable", "dresser", "shelf", "sidetable")
_BATH = ("cabinet", "countertop", "drawer", "garbagecan", "shelf", "toilet")

# Object type -> ((min, max) count, receptacle types it may start in and be put in), per scene.
_OBJECTS: dict[str, dict[str, tuple[tuple[int, int], tuple[str, ...]]]] = {
    "kitchen": {
        "apple": ((0, 3), _FOOD),
        "bowl": ((0, 2), _DISH),
        "bread": ((0, 2), _FOOD[:4]),
        "butterknife": ((0, 2), _UTENSIL),
        "cup": ((0, 3), _DISH),
        "dishsponge": ((0, 2), (*_UTENSIL, "cabinet")),
        "egg": ((0, 3), _FOOD),
        "fork": ((0, 2), _UTENSIL),
        "knife": ((0, 3), _UTENSIL),
        "ladle": ((0, 2), _UTENSIL),
        "lettuce": ((0, 2), ("countertop", "diningtable", "fridge", "garbagecan", "sinkbasin")),
        "mug": ((0, 3), (*_DISH, "coffeemachine")),
        "pan": ((0, 1), _COOKWARE),
        "peppershaker": ((0, 2), ("cabinet", "countertop", "drawer", "shelf")),
        "plate": ((0, 3), _DISH),
        "pot": ((0, 2), _COOKWARE),
        "potato": ((0, 3), _FOOD),
        "saltshaker": ((0, 2), ("cabinet", "countertop", "drawer", "shelf")),
        "soapbottle": ((0, 2), ("cabinet", "countertop", "shelf")),
        "spatula": ((0, 2), _UTENSIL),
        "spoon": ((0, 2), _UTENSIL),
        "tomato": ((0, 3), _FOOD),
        "winebottle": ((0, 2), ("cabinet", "countertop", "diningtable", "fridge", "shelf")),
    },
    "bedroom": {
        "alarmclock": ((0, 2), ("desk", "dresser", "shelf", "sidetable")),
        "book": ((0, 3), ("bed", "desk", "drawer", "dresser", "shelf", "sidetable")),
        "cd": ((0, 3), (*_SMALL, "garbagecan", "safe")),
        "cellphone": ((0, 3), (*_SMALL, "bed", "safe")),
        "creditcard": ((0, 2), (*_SMALL, "safe")),
        "keychain": ((0, 3), (*_SMALL, "safe")),
        "laptop": ((0, 2), ("bed", "desk", "dresser", "sidetable")),
        "mug": ((0, 2), ("desk", "shelf", "sidetable")),
        "pen": ((0, 3), (*_SMALL, "garbagecan")),
        "pencil": ((0, 3), (*_SMALL, "garbagecan")),
        "pillow": ((0, 2), ("armchair", "bed")),
        "tissuebox": ((0, 2), ("desk", "dresser", "shelf", "sidetable")),
        "watch": ((0, 2), (*_SMALL, "safe")),
    },
    "bathroom": {
        "candle": ((0, 3), ("cabinet", "countertop", "drawer", "shelf", "toilet")),
        "cloth": ((0, 3), (*_BATH, "bathtubbasin", "sinkbasin")),
        "handtowel": ((0, 1), ("cabinet", "countertop", "handtowelholder")),
        "soapbar": ((0, 3), (*_BATH, "bathtubbasin", "sinkbasin")),
        "soapbottle": ((0, 3), _BATH),
        "spraybottle": ((0, 3), _BATH),
        "tissuebox": ((0, 2), ("cabinet", "countertop", "shelf", "toilet")),
        "toiletpaper": ((0, 3), (*_BATH, "toiletpaperhanger")),
        "towel": ((0, 1), ("towelholder",)),
    },
    "livingroom": {
        "book": ((0, 2), (*_DECOR, "armchair", "sofa")),
        "box": ((0, 2), (*_DECOR, "armchair", "sofa")),
        "candle": ((0, 2), _DECOR),
        "cellphone": ((0, 2), (*_SMALL, "armchair", "safe", "sofa")),
        "creditcard": ((0, 3), (*_SMALL, "armchair", "safe", "sofa")),
        "keychain": ((0, 3), (*_SMALL, "armchair", "safe", "sofa")),
        "laptop": ((0, 2), ("armchair", "coffeetable", "diningtable", "sofa")),
        "newspaper": ((0, 2), ("armchair", "coffeetable", "diningtable", "garbagecan", "sidetable", "sofa")),
        "pillow": ((0, 3), ("armchair", "sofa")),
        "remotecontrol": ((0, 3), (*_SMALL, "armchair", "sofa")),
        "statue": ((0, 3), _DECOR[1:]),
        "vase": ((0, 3), _DECOR),
        "watch": ((0, 2), (*_SMALL, "safe")),
    },
}

# Lamp type -> receptacle types it stands on or next to, per scene.
_LAMP_PLACES: dict[str, dict[str, tuple[str, ...]]] = {
    "bedroom": {"desklamp": ("desk", "dresser", "sidetable")},
    "livingroom": {"floorlamp": ("armchair", "sidetable", "sofa"), "desklamp": ("dresser", "sidetable")},
}


def kind_of(name: str) -> str:
    """The type of a numbered object or receptacle: ``"cabinet 3"`` -> ``"cabinet"``."""
    return name.rpartition(" ")[0] or name


def object_types(scene: str) -> dict[str, tuple[str, ...]]:
    """The pickable object types of ``scene`` with the receptacle types they belong in."""
    _check_scene(scene)
    return {kind: places for kind, (_, places) in _OBJECTS[scene].items()}


def _check_scene(scene: str) -> None:
    if scene not in SCENES:
        raise UnknownNameError("scene", str(scene), SCENES)


@dataclass(frozen=True)
class World:
    """The initial layout of one room.

    Attributes:
        scene: ``kitchen``, ``bedroom``, ``bathroom`` or ``livingroom``.
        seed: the seed the layout was generated from.
        receptacles: every receptacle, in the order the room lists them (by type, then number).
        placement: ``(object, receptacle)`` pairs, in the order a receptacle lists its contents.
    """

    scene: str
    seed: int
    receptacles: tuple[str, ...]
    placement: tuple[tuple[str, str], ...]

    @property
    def objects(self) -> tuple[str, ...]:
        return tuple(obj for obj, _ in self.placement)

    def contents(self) -> dict[str, list[str]]:
        """Receptacle -> the objects that start in or on it."""
        found: dict[str, list[str]] = {r: [] for r in self.receptacles}
        for obj, receptacle in self.placement:
            found[receptacle].append(obj)
        return found

    def of_kind(self, kind: str) -> list[str]:
        """The receptacles or objects of a type, in listing order."""
        return [n for n in (*self.receptacles, *self.objects) if kind_of(n) == kind]

    def to_dict(self) -> dict[str, Any]:
        return {
            "scene": self.scene,
            "seed": self.seed,
            "receptacles": list(self.receptacles),
            "placement": [list(pair) for pair in self.placement],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> World:
        try:
            receptacles = tuple(str(r) for r in data["receptacles"])
            placement = tuple((str(o), str(r)) for o, r in data["placement"])
            world = cls(str(data["scene"]), int(data["seed"]), receptacles, placement)
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigurationError(f"not an ALFWorld world: {exc}") from exc
        known = set(receptacles)
        if any(r not in known for _, r in placement):
            raise ConfigurationError("an object of the world is placed in a receptacle the room lacks")
        return world

    @classmethod
    def from_json(cls, text: str) -> World:
        return cls.from_dict(json.loads(text))


def make_world(scene: str, seed: int) -> World:
    """Generate the room ``(scene, seed)``: the same arguments give the same world on any machine."""
    _check_scene(scene)
    rng = random.Random(f"alfworld-{scene}-{seed}")
    receptacles: list[str] = []
    for kind, (low, high) in sorted(_RECEPTACLES[scene].items()):
        receptacles.extend(f"{kind} {i}" for i in range(1, rng.randint(low, high) + 1))
    by_kind: dict[str, list[str]] = {}
    for name in receptacles:
        by_kind.setdefault(kind_of(name), []).append(name)
    placement: list[tuple[str, str]] = []
    for kind, ((low, high), places) in _OBJECTS[scene].items():
        spots = [r for place in places for r in by_kind.get(place, ())]
        if spots:
            placement.extend((f"{kind} {i}", rng.choice(spots)) for i in range(1, rng.randint(low, high) + 1))
    lamps = _LAMP_PLACES.get(scene)
    if lamps:  # one lamp a room, as in ALFWorld's look_at_obj_in_light scenes
        lamp = rng.choice(sorted(lamps))
        spots = [r for place in lamps[lamp] for r in by_kind.get(place, ())]
        placement.append((f"{lamp} 1", rng.choice(spots)))
    rng.shuffle(placement)  # contents are listed in this order; shuffled so that types interleave
    return World(scene, int(seed), tuple(receptacles), tuple(placement))


@lru_cache(maxsize=2048)
def load_world(scene: str, seed: int) -> World:
    """:func:`make_world`, cached per process (tasks and episodes rebuild their world often)."""
    return make_world(scene, int(seed))
