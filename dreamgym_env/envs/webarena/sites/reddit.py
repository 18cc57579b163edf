"""``reddit``: a Postmill-like forum site at ``http://reddit.local``.

URLs: ``/`` (front page: newest posts), ``/forums``, ``/f/<forum>`` (its posts and the
Subscribe button), ``/f/<forum>/<post id>`` (post, votes, comments and the comment form),
``/submit/<forum>`` (new post form) and ``/search?q=...``. The signed-in user is
:data:`ME`.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache

from dreamgym_env.envs.webarena.sites import base as ui
from dreamgym_env.envs.webarena.sites.base import NotFound, Outcome, Request, Site, named, with_all_words

ME = "MarvelsGrantMan136"
FORUMS = (
    "books",
    "gaming",
    "science",
    "movies",
    "technology",
    "Music",
    "sports",
    "food",
    "travel",
    "DIY",
    "history",
    "photography",
)
TOPICS = (
    "the new release",
    "my first attempt",
    "a hidden gem",
    "the weekend project",
    "an old classic",
    "this year's favourites",
    "a beginner question",
    "the best advice",
    "an unpopular opinion",
    "a surprising discovery",
    "the community poll",
    "a quick tip",
)
OPENERS = ("Thoughts on", "Looking for", "Show and tell:", "Discussion:", "Help with", "Review of")
USERS = (
    "Sorcerer_Supreme",
    "jaynecobb",
    "kittybeans",
    "ElDelic",
    "noodle_arms",
    "PaperPlane42",
    "quietstorm",
    "Rocket_Raccoon",
    "starfish99",
    "tofu_master",
    "urban_owl",
    "vintage_vibes",
    "waffle_iron",
    "xeno_phile",
    "yodel_ay",
    "zen_garden",
    "bookworm_88",
    "CaptainObvious",
    "dustybits",
    "EchoLocation",
)
REMARKS = (
    "Totally agree with this.",
    "I had the same experience.",
    "Thanks for sharing!",
    "Could you explain more?",
    "This made my day.",
    "Not sure about that.",
    "Great write-up.",
    "Source?",
)
POSTS_PER_FORUM = 12


@dataclass(frozen=True)
class Comment:
    author: str
    body: str


@dataclass(frozen=True)
class Post:
    id: int
    forum: str
    title: str
    author: str
    body: str
    score: int
    comments: tuple[Comment, ...]

    @property
    def path(self) -> str:
        return f"/f/{self.forum}/{self.id}"


@dataclass(frozen=True)
class Forum:
    name: str
    description: str
    subscribers: int


@dataclass(frozen=True)
class Reddit:
    """The seeded forums and posts (never changed; episodes change a :class:`RedditState`)."""

    seed: int
    forums: tuple[Forum, ...]
    posts: tuple[Post, ...]
    subscribed: frozenset[str]

    def forum(self, name: str) -> Forum | None:
        return named(self.forums, name, lambda f: f.name)

    def post_titled(self, forum: str, title: str) -> Post | None:
        return named((p for p in self.posts if p.forum == forum), title, lambda p: p.title)


@dataclass
class RedditState:
    """What an episode changes: subscriptions, the user's votes, new comments and posts."""

    reddit: Reddit
    subscribed: set[str] = field(default_factory=set)
    votes: dict[int, int] = field(default_factory=dict)
    comments: dict[int, list[Comment]] = field(default_factory=dict)
    posts: list[Post] = field(default_factory=list)

    @classmethod
    def fresh(cls, reddit: Reddit) -> RedditState:
        """The state at the start of an episode: the seeded subscriptions, nothing else."""
        return cls(reddit, set(reddit.subscribed))

    def all_posts(self) -> list[Post]:
        return [*self.reddit.posts, *self.posts]

    def post(self, post_id: int) -> Post | None:
        return next((p for p in self.all_posts() if p.id == post_id), None)

    def comments_of(self, post: Post) -> list[Comment]:
        return [*post.comments, *self.comments.get(post.id, ())]

    def score(self, post: Post) -> int:
        return post.score + self.votes.get(post.id, 0)

    def subscribers(self, forum: Forum) -> int:
        return forum.subscribers + (forum.name in self.subscribed) - (forum.name in self.reddit.subscribed)


@cache
def load_reddit(seed: int) -> Reddit:
    """The forum data of ``seed``, built once per process."""
    rng = random.Random(f"webarena-reddit-{seed}")
    forums = tuple(
        Forum(name, f"A place to talk about {name.lower()}.", rng.randint(50, 5000)) for name in FORUMS
    )
    posts: list[Post] = []
    for forum in FORUMS:
        titles = rng.sample([f"{o} {t}" for o in OPENERS for t in TOPICS], POSTS_PER_FORUM)
        for title in titles:
            comments = tuple(
                Comment(rng.choice(USERS), rng.choice(REMARKS)) for _ in range(rng.randint(0, 7))
            )
            body = f"Posting in /f/{forum} about {title.split(' ', 1)[1] if ' ' in title else title}."
            posts.append(
                Post(len(posts), forum, title, rng.choice(USERS), body, rng.randint(-3, 120), comments)
            )
    return Reddit(seed, forums, tuple(posts), frozenset(rng.sample(FORUMS, 3)))


class RedditSite(Site[RedditState]):
    host = "reddit.local"
    title = "Postmill"
    title_template = "{}"

    def navigation(self) -> ui.Node:
        return ui.group(
            "navigation",
            self.link(self.title),
            self.link("Forums", "/forums"),
            ui.search_box("Search query"),
            ui.text(ME),
        )

    def _listing(self, posts: Iterable[Post], empty: str | None = None) -> ui.Node:
        """A ``list`` of posts, each with its title (a link to it), byline, points and comment count."""
        rows = [
            [
                self.link(post.title, post.path),
                ui.text(f"Submitted by {post.author} in /f/{post.forum}"),
                ui.text(f"{self.state.score(post)} points"),
                ui.text(f"{len(self.state.comments_of(post))} comments"),
            ]
            for post in posts
        ]
        return ui.listing(rows, empty)

    def page(self, request: Request) -> ui.Page:
        parts = request.path.strip("/").split("/") if request.path != "/" else []
        if not parts:
            newest = sorted(self.state.all_posts(), key=lambda p: -p.id)[:15]
            return self.frame("Postmill", ui.heading("Front page"), self._listing(newest))
        if parts == ["forums"]:
            rows = [
                [self.link(f.name, f"/f/{f.name}"), ui.text(f"{f.subscribers} subscribers")]
                for f in sorted(self.state.reddit.forums, key=lambda f: f.name.lower())
            ]
            return self.frame("List of forums", ui.heading("Forums"), ui.listing(rows))
        if parts == ["search"]:
            found = with_all_words(self.state.all_posts(), request.get("q"), lambda p: p.title)
            return self.frame(
                f"Search results for '{request.get('q')}'",
                ui.heading("Search results"),
                self._listing(found, empty="No results."),
            )
        forum = self.state.reddit.forum(parts[1]) if len(parts) >= 2 and parts[0] in ("f", "submit") else None
        if forum is None or len(parts) > 3:
            raise NotFound(request.path)
        if parts[0] == "submit" and len(parts) == 2:
            return self.frame(
                f"Create submission in /f/{forum.name}",
                ui.heading("Create submission"),
                ui.text(f"Forum: /f/{forum.name}"),
                ui.textbox("Title", "title", required=True),
                ui.textbox("Body", "body"),
                ui.button("Create submission", "submit_post", forum.name),
            )
        if len(parts) == 2:
            return self._forum(forum)
        if parts[0] == "f" and parts[2].isdigit():
            post = self.state.post(int(parts[2]))
            if post is not None and post.forum == forum.name:
                return self._post(post)
        raise NotFound(request.path)

    def _forum(self, forum: Forum) -> ui.Page:
        subscribed = forum.name in self.state.subscribed
        posts = [p for p in self.state.all_posts() if p.forum == forum.name]
        return self.headed(
            f"/f/{forum.name}",
            ui.text(forum.description),
            ui.button("Unsubscribe" if subscribed else "Subscribe", "subscribe", forum.name),
            ui.text(f"{self.state.subscribers(forum)} subscribers"),
            self.link("Submit a new post", f"/submit/{forum.name}"),
            self._listing(sorted(posts, key=lambda p: -p.id)),
        )

    def _post(self, post: Post) -> ui.Page:
        vote = self.state.votes.get(post.id, 0)
        comments = [[ui.text(c.author), ui.text(c.body)] for c in self.state.comments_of(post)]
        return self.headed(
            post.title,
            ui.text(f"Submitted by {post.author} in /f/{post.forum}"),
            ui.text(post.body),
            ui.button("Retract upvote" if vote > 0 else "Upvote", "vote", str(post.id), "1"),
            ui.text(f"{self.state.score(post)} points"),
            ui.button("Retract downvote" if vote < 0 else "Downvote", "vote", str(post.id), "-1"),
            ui.heading(f"{len(comments)} comments"),
            ui.listing(comments),
            ui.textbox("Comment", "comment"),
            ui.button("Post", "comment", str(post.id)),
        )

    def operate(self, op: str, args: tuple[str, ...], values: Mapping[str, str]) -> Outcome:
        if op == "subscribe":
            self.state.subscribed ^= {args[0]}
            return Outcome(self.url(f"/f/{args[0]}"))
        post = self.state.post(int(args[0])) if op in ("vote", "comment") else None
        if post is not None and op == "vote":
            direction = int(args[1])
            self.state.votes[post.id] = 0 if self.state.votes.get(post.id, 0) == direction else direction
            return Outcome(self.url(post.path))
        if post is not None and op == "comment":
            body = values.get("comment", "").strip()
            if not body:
                return Outcome(self.url(post.path), "This value should not be blank.")
            self.state.comments.setdefault(post.id, []).append(Comment(ME, body))
            return Outcome(self.url(post.path), "Your comment was posted.")
        if op == "submit_post":
            title, body = values.get("title", "").strip(), values.get("body", "").strip()
            if not title:
                return Outcome(self.url(f"/submit/{args[0]}"), "This value should not be blank.")
            post_id = len(self.state.reddit.posts) + len(self.state.posts)
            self.state.posts.append(Post(post_id, args[0], title, ME, body, 1, ()))
            return Outcome(self.url(f"/f/{args[0]}/{post_id}"), "Your submission was created.")
        raise NotFound(op)
