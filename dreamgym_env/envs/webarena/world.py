"""The five sites of one data seed, with fresh state for an episode.

The seeded data of every site is built once per process per seed (:func:`load_data`); a
:class:`World` wraps it with empty overlays of what an episode may change, so a reset costs a
few small dicts, never a copy of the data.

:meth:`World.changes` writes those overlays as lines, ``<kind> <JSON list>`` (``cart [12, 2]``,
``order status [120, "Complete"]``, ``comment [5, "Nice post"]``), and :meth:`World.apply` reads
them back into a fresh world: a page's state that carries them holds the whole of the sites'
state, so the next page of any action on it can be rebuilt from the seeded data.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from dreamgym_env.envs.webarena.sites import gitlab, reddit
from dreamgym_env.envs.webarena.sites.admin import AdminSite
from dreamgym_env.envs.webarena.sites.base import Site
from dreamgym_env.envs.webarena.sites.gitlab import GitLab, GitLabSite, GitLabState, Issue, load_gitlab
from dreamgym_env.envs.webarena.sites.map import MapData, MapSite, load_map
from dreamgym_env.envs.webarena.sites.reddit import (
    Comment,
    Post,
    Reddit,
    RedditSite,
    RedditState,
    load_reddit,
)
from dreamgym_env.envs.webarena.sites.shopping import ShoppingSite
from dreamgym_env.envs.webarena.sites.store import ME, TODAY, Order, OrderLine, Store, StoreState, load_store

SITES = ("shopping", "shopping_admin", "reddit", "gitlab", "map")
DEFAULT_DATA_SEED = 0


@dataclass(frozen=True)
class SiteData:
    """The seeded data of all sites (never changed)."""

    seed: int
    store: Store
    reddit: Reddit
    gitlab: GitLab
    map: MapData


@cache
def load_data(seed: int = DEFAULT_DATA_SEED) -> SiteData:
    """The sites' data of ``seed``, built once per process."""
    return SiteData(seed, load_store(seed), load_reddit(seed), load_gitlab(seed), load_map(seed))


class World:
    """The sites at the start of an episode; their state changes as the agent acts."""

    def __init__(self, data: SiteData) -> None:
        self.data = data
        self.store = StoreState(data.store)
        self.reddit = RedditState.fresh(data.reddit)
        self.gitlab = GitLabState.fresh(data.gitlab)
        self.sites: dict[str, Site] = {
            "shopping": ShoppingSite(self.store),
            "shopping_admin": AdminSite(self.store),
            "reddit": RedditSite(self.reddit),
            "gitlab": GitLabSite(self.gitlab),
            "map": MapSite(data.map),
        }
        self.by_host = {site.host: site for site in self.sites.values()}

    def home(self, site: str) -> str:
        """The home page URL of a site."""
        return self.sites[site].url()

    def changes(self) -> list[str]:
        """What the episode changed, one line a change, in the order the overlays hold them (``[]``: nothing)."""
        store, forums, projects = self.store, self.reddit, self.gitlab
        records: list[tuple[str, list[Any]]] = [
            *(("cart", [pid, qty]) for pid, qty in store.cart.items()),
            *(
                ("placed order", [o.number, [[line.product_id, line.qty, line.price] for line in o.lines]])
                for o in store.placed
            ),
            *(("order status", [number, status]) for number, status in store.statuses.items()),
            *(("price", [pid, price]) for pid, price in store.prices.items()),
            *(
                ("subscribed", [f, f in forums.subscribed])
                for f in sorted(forums.subscribed ^ set(self.data.reddit.subscribed))
            ),
            *(("vote", [post, direction]) for post, direction in forums.votes.items() if direction),
            *(("comment", [post, c.body]) for post, comments in forums.comments.items() for c in comments),
            *(("new post", [p.id, p.forum, p.title, p.body]) for p in forums.posts),
            *(
                ("starred", [p, p in projects.starred])
                for p in sorted(projects.starred ^ set(self.data.gitlab.starred))
            ),
            *(
                ("new issue", [path, i.iid, i.title, i.description])
                for path, issues in projects.new_issues.items()
                for i in issues
            ),
            *(("issue state", [path, iid, state]) for (path, iid), state in projects.issue_states.items()),
            *(
                ("member", [path, user, role])
                for path, roles in projects.members.items()
                for user, role in roles.items()
            ),
        ]
        return [f"{kind} {json.dumps(args, ensure_ascii=False)}" for kind, args in records]

    def apply(self, changes: Sequence[str]) -> None:
        """Make the changes :meth:`changes` wrote; ``ValueError`` for a line it cannot read (the world is then part-changed)."""
        for line in changes:
            kind, _, raw = line.partition(" [")
            try:
                _apply_change(self, kind, json.loads(f"[{raw}"))
            except (TypeError, ValueError) as exc:
                raise ValueError(f"not a change of the sites: {line!r}") from exc


def _toggle(names: set[str], name: str, present: bool) -> None:
    if present:
        names.add(name)
    else:
        names.discard(name)


def _apply_change(world: World, kind: str, args: list[Any]) -> None:
    """One line of :meth:`World.changes` made again (``TypeError``/``ValueError`` for an unreadable one)."""
    store, forums, projects = world.store, world.reddit, world.gitlab
    match kind, args:
        case "cart", [int(pid), int(qty)]:
            store.cart[pid] = qty
        case "placed order", [int(number), list(lines)]:
            order_lines = tuple(OrderLine(int(pid), int(qty), float(price)) for pid, qty, price in lines)
            store.placed.append(Order(number, ME, TODAY, order_lines, "Pending"))
        case "order status", [int(number), str(status)]:
            store.statuses[number] = status
        case "price", [int(pid), int(price) | float(price)]:
            store.prices[pid] = float(price)
        case "subscribed", [str(forum), bool(present)]:
            _toggle(forums.subscribed, forum, present)
        case "vote", [int(post), int(direction)]:
            forums.votes[post] = direction
        case "comment", [int(post), str(body)]:
            forums.comments.setdefault(post, []).append(Comment(reddit.ME, body))
        case "new post", [int(post), str(forum), str(title), str(body)]:
            forums.posts.append(Post(post, forum, title, reddit.ME, body, 1, ()))
        case "starred", [str(path), bool(present)]:
            _toggle(projects.starred, path, present)
        case "new issue", [str(path), int(iid), str(title), str(description)]:
            projects.new_issues.setdefault(path, []).append(
                Issue(iid, title, gitlab.ME, "opened", description)
            )
        case "issue state", [str(path), int(iid), str(state)]:
            projects.issue_states[path, iid] = state
        case "member", [str(path), str(user), str(role)]:
            projects.members.setdefault(path, {})[user] = role
        case _:
            raise ValueError(f"unknown change {kind!r} {args!r}")
