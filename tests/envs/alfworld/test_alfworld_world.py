from __future__ import annotations

import pytest

from dreamgym_env.envs.alfworld.world import (
    LAMPS,
    OPENABLE,
    SCENES,
    World,
    can_contain,
    kind_of,
    load_world,
    make_world,
    object_types,
)
from dreamgym_env.errors import ConfigurationError, UnknownNameError


@pytest.mark.parametrize("scene", SCENES)
def test_the_same_scene_and_seed_give_the_same_world(scene):
    assert make_world(scene, 7) == make_world(scene, 7)
    assert make_world(scene, 7) != make_world(scene, 8)


def test_a_fixed_world_stays_the_same():
    world = make_world("kitchen", 0)
    assert world.receptacles[:3] == ("cabinet 1", "cabinet 2", "cabinet 3")
    assert "fridge 1" in world.receptacles and "microwave 1" in world.receptacles
    assert world.contents()["fridge 1"] == ["egg 2", "pot 1"]


@pytest.mark.parametrize("scene", SCENES)
def test_every_placement_is_one_alfred_allows(scene):
    """alfworld/gen/constants.py's VAL_RECEPTACLE_OBJECTS (the PDDL's canContain): no pickable object
    starts where ALFRED forbids it, and every type the scene offers may go where it is listed."""
    for place_list in object_types(scene).values():
        assert place_list
    for kind, places in object_types(scene).items():
        assert all(can_contain(place, kind) for place in places), kind
    for seed in range(30):
        world = make_world(scene, seed)
        for obj, recep in world.placement:
            assert kind_of(obj) in LAMPS or can_contain(kind_of(recep), kind_of(obj)), (obj, recep)


def test_alfred_rules_forbid_what_alfred_forbids():
    """ALFRED's VAL_RECEPTACLE_OBJECTS: a candle may not go in a garbagecan, an apple not in a cabinet."""
    assert not can_contain("garbagecan", "candle") and not can_contain("cabinet", "apple")
    assert can_contain("countertop", "apple") and can_contain("sidetable", "apple")  # TableTop's entry
    assert not can_contain("toaster", "bread")  # only BreadSliced, which the text games leave out


def test_world_round_trips_through_json():
    world = make_world("livingroom", 5)
    assert World.from_json(world.to_json()) == world


def test_from_dict_refuses_malformed_worlds():
    with pytest.raises(ConfigurationError):
        World.from_dict({"scene": "kitchen"})
    bad = make_world("kitchen", 1).to_dict()
    bad["placement"].append(["apple 9", "spaceship 1"])
    with pytest.raises(ConfigurationError):
        World.from_dict(bad)


def test_unknown_scene_suggests_a_known_one():
    with pytest.raises(UnknownNameError, match="kitchen"):
        make_world("kitchn", 0)


@pytest.mark.parametrize("scene", SCENES)
def test_rooms_follow_alfworld_vocabulary(scene):
    for seed in range(20):
        world = load_world(scene, seed)
        assert len(world.receptacles) >= 10
        assert len(set(world.receptacles)) == len(world.receptacles)
        assert all(r in world.receptacles for _, r in world.placement)
        names = world.objects
        assert len(set(names)) == len(names)
        for name in (*world.receptacles, *names):
            kind, number = name.rsplit(" ", 1)
            assert kind.isalpha() and kind.islower() and int(number) >= 1
        lamps = [o for o in names if kind_of(o) in LAMPS]
        assert len(lamps) == (1 if scene in ("bedroom", "livingroom") else 0)
        for lamp in lamps:  # lamps stand on furniture, never inside something closed
            assert kind_of(dict(world.placement)[lamp]) not in OPENABLE


def test_kitchens_have_the_tools_of_clean_heat_and_cool():
    for seed in range(20):
        kinds = {kind_of(r) for r in load_world("kitchen", seed).receptacles}
        assert {"sinkbasin", "microwave", "fridge", "countertop", "cabinet"} <= kinds
