"""``map``: an OpenStreetMap-like map at ``http://map.local``.

URLs: ``/`` (search box), ``/search?q=...``, ``/place/<id>`` and
``/directions?from=...&to=...&mode=car|bicycle|foot`` (the route form; with both ends known,
the route's distance and time). Places lie on a plane; a route is 1.3 times the straight line
and takes the time of its mode's speed (:data:`SPEEDS_KMH`). The map has no state to change.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache

from rapidfuzz import fuzz

from dreamgym_env.envs.webarena.sites import base as ui
from dreamgym_env.envs.webarena.sites.base import (
    NotFound,
    Outcome,
    Request,
    Site,
    collapse_spaces,
    with_all_words,
)

SPEEDS_KMH = {"car": 45.0, "bicycle": 16.0, "foot": 5.0}
MODE_LABELS = {"car": "Car", "bicycle": "Bicycle", "foot": "Foot"}
ROAD_FACTOR = 1.3
PLACES = (
    ("Carnegie Mellon University", "university"),
    ("University of Pittsburgh", "university"),
    ("Phipps Conservatory", "garden"),
    ("Carnegie Museum of Art", "museum"),
    ("Andy Warhol Museum", "museum"),
    ("PNC Park", "stadium"),
    ("Acrisure Stadium", "stadium"),
    ("Pittsburgh International Airport", "airport"),
    ("Union Station", "station"),
    ("Schenley Park", "park"),
    ("Frick Park", "park"),
    ("Point State Park", "park"),
    ("Heinz History Center", "museum"),
    ("Mattress Factory", "museum"),
    ("National Aviary", "zoo"),
    ("Pittsburgh Zoo", "zoo"),
    ("Kennywood", "amusement park"),
    ("Duquesne Incline", "attraction"),
    ("Strip District Market", "market"),
    ("Allegheny General Hospital", "hospital"),
    ("UPMC Presbyterian", "hospital"),
    ("Carnegie Library Main", "library"),
    ("Cathedral of Learning", "landmark"),
    ("Market Square", "square"),
    ("Station Square", "mall"),
    ("Waterfront Mall", "mall"),
    ("Ross Park Mall", "mall"),
    ("Millvale Riverfront Park", "park"),
    ("Hartwood Acres", "park"),
    ("Sewickley Heights", "park"),
)
STREETS = (
    "Forbes Avenue",
    "Fifth Avenue",
    "Liberty Avenue",
    "Penn Avenue",
    "Smithfield Street",
    "Grant Street",
    "Butler Street",
    "Murray Avenue",
    "Centre Avenue",
    "Baum Boulevard",
)


@dataclass(frozen=True)
class Place:
    id: int
    name: str
    kind: str
    address: str
    x: float
    y: float


@dataclass(frozen=True)
class Route:
    start: Place
    end: Place
    mode: str

    @property
    def km(self) -> float:
        return round(ROAD_FACTOR * math.dist((self.start.x, self.start.y), (self.end.x, self.end.y)), 1)

    @property
    def minutes(self) -> int:
        return max(1, round(60 * self.km / SPEEDS_KMH[self.mode]))

    @property
    def time(self) -> str:
        """The time as OpenStreetMap shows it, ``h:mm``."""
        return f"{self.minutes // 60}:{self.minutes % 60:02d}"


@dataclass(frozen=True)
class MapData:
    seed: int
    places: tuple[Place, ...]

    def place(self, name: str) -> Place | None:
        """The place of a name: exact (any case), else the closest name scoring at least 85."""
        folded = collapse_spaces(name.lower())
        exact = next((p for p in self.places if p.name.lower() == folded), None)
        if exact is not None or not folded:
            return exact
        best = max(self.places, key=lambda p: fuzz.WRatio(folded, p.name.lower()))
        return best if fuzz.WRatio(folded, best.name.lower()) >= 85 else None


@cache
def load_map(seed: int) -> MapData:
    """The places of ``seed``, built once per process."""
    rng = random.Random(f"webarena-map-{seed}")
    places = tuple(
        Place(
            i,
            name,
            kind,
            f"{rng.randint(100, 9999)} {rng.choice(STREETS)}, Pittsburgh, PA {rng.randint(15201, 15299)}",
            round(rng.uniform(0, 30), 2),
            round(rng.uniform(0, 30), 2),
        )
        for i, (name, kind) in enumerate(PLACES)
    )
    return MapData(seed, places)


class MapSite(Site[MapData]):
    """The map; its state is its data, which nothing changes."""

    host = "map.local"
    title = "OpenStreetMap"
    title_template = "{} | OpenStreetMap"

    def navigation(self) -> ui.Node:
        return ui.group(
            "navigation",
            self.link(self.title),
            ui.search_box("Search"),
            self.link("Find directions between two points", "/directions"),
        )

    def page(self, request: Request) -> ui.Page:
        if request.path == "/":
            return self.frame("", ui.heading("Welcome to OpenStreetMap!"))
        if request.path == "/search":
            found = with_all_words(self.state.places, request.get("q"), lambda p: f"{p.name} {p.kind}")
            rows = [[self.link(p.name, f"/place/{p.id}"), ui.text(p.address)] for p in found]
            return self.frame(
                "Search", ui.heading("Search Results"), ui.listing(rows, empty="No results found")
            )
        if (p := request.item("/place/", self.state.places)) is not None:
            return self.headed(
                p.name,
                ui.text(p.kind.capitalize()),
                ui.text(f"Address: {p.address}"),
                self.link("Directions from here", "/directions", **{"from": p.name}),
                self.link("Directions to here", "/directions", to=p.name),
            )
        if request.path == "/directions":
            return self._directions(request)
        raise NotFound(request.path)

    def _directions(self, request: Request) -> ui.Page:
        start, end, mode = request.get("from"), request.get("to"), request.get("mode", "car")
        if mode not in SPEEDS_KMH:
            raise NotFound(mode)
        ends = {"from": start, "to": end}
        modes = [
            self.link(f"{label} (selected)" if m == mode else label, "/directions", **ends, mode=m)
            for m, label in MODE_LABELS.items()
        ]
        body: list[ui.Node] = [
            ui.textbox("From", "from", value=start),
            ui.textbox("To", "to", value=end),
            ui.group("radiogroup", *modes),
            ui.button("Go", "directions", mode),
        ]
        a, b = self.state.place(start), self.state.place(end)
        if start and end and a is not None and b is not None:
            route = Route(a, b, mode)
            body += [
                ui.text(f"Route from {a.name} to {b.name} by {MODE_LABELS[mode].lower()}"),
                ui.text(f"Distance: {route.km}km. Time: {route.time}."),
            ]
        elif start and end:
            body.append(ui.text("Sorry, no route could be found between these points."))
        return self.headed("Directions", *body)

    def operate(self, op: str, args: tuple[str, ...], values: Mapping[str, str]) -> Outcome:
        if op == "directions":
            start, end = (collapse_spaces(values.get(k, "")) for k in ("from", "to"))
            return Outcome(
                self.url("/directions", **{"from": start}, to=end, mode=args[0] if args else "car")
            )
        raise NotFound(op)
