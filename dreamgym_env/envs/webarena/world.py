"""The five sites of one data seed, with fresh state for an episode.

The seeded data of every site is built once per process per seed (:func:`load_data`); a
:class:`World` wraps it with empty overlays of what an episode may change, so a reset costs a
few small dicts, never a copy of the data.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from dreamgym_env.envs.webarena.sites.admin import AdminSite
from dreamgym_env.envs.webarena.sites.base import Site
from dreamgym_env.envs.webarena.sites.gitlab import GitLab, GitLabSite, GitLabState, load_gitlab
from dreamgym_env.envs.webarena.sites.map import MapData, MapSite, load_map
from dreamgym_env.envs.webarena.sites.reddit import Reddit, RedditSite, RedditState, load_reddit
from dreamgym_env.envs.webarena.sites.shopping import ShoppingSite
from dreamgym_env.envs.webarena.sites.store import Store, StoreState, load_store

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
