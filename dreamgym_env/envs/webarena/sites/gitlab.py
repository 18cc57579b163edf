"""``gitlab``: a GitLab-like code host at ``http://gitlab.local``.

URLs: ``/`` (projects, ``?q=`` filters by name), ``/<namespace>/<project>`` (Star button and
links), ``.../-/issues?state=opened|closed|all``, ``.../-/issues/<iid>``, ``.../-/issues/new``,
``.../-/merge_requests?state=opened|merged|closed|all``, ``.../-/merge_requests/<iid>`` and
``.../-/project_members`` (members and the invite form). The signed-in user is :data:`ME`.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache

from dreamgym_env.envs.webarena.sites.base import (
    Node,
    NotFound,
    Outcome,
    Page,
    Request,
    Site,
    button,
    collapse_spaces,
    combobox,
    group,
    heading,
    link,
    listing,
    search_box,
    text,
    textbox,
)

ME = "byteblaze"
ROLES = ("Guest", "Reporter", "Developer", "Maintainer")
PEOPLE = (
    ("byteblaze", "Byte Blaze"),
    ("abisubramanya27", "Abishek S"),
    ("yjlou", "Yi-Jie Lou"),
    ("vinta", "Vinta Chen"),
    ("koush", "Koushik Dutta"),
    ("sindresorhus", "Sindre Sorhus"),
    ("kilian", "Kilian Valkhof"),
    ("jakobbrezlan", "Jakob Brezlan"),
    ("mrdoob", "Ricardo Cabello"),
    ("thomasdavis", "Thomas Davis"),
    ("convexhull", "Convex Hull"),
    ("lahwaacz", "Jakub Klinkovsky"),
    ("amwhalen", "Aaron Whalen"),
    ("justinwhite", "Justin White"),
    ("primer", "Primer Bot"),
    ("emilyw", "Emily Wong"),
    ("rohan_t", "Rohan Tiwari"),
    ("marisol", "Marisol Diaz"),
    ("deepak", "Deepak Rao"),
    ("hannahk", "Hannah Klein"),
)
PROJECTS = (
    "a11y-syntax-highlighting",
    "dotfiles",
    "timeline-viewer",
    "web-starter-kit",
    "chatbot-ui",
    "design-tokens",
    "api-gateway",
    "log-parser",
    "pixel-editor",
    "recipe-app",
    "weather-cli",
    "budget-tracker",
    "markdown-wiki",
    "image-resizer",
    "task-runner",
    "color-picker",
    "notes-sync",
    "metrics-dashboard",
    "auth-service",
    "game-of-life",
    "tiny-http",
    "json-diff",
    "cron-scheduler",
    "photo-gallery",
)
ISSUE_SUBJECTS = (
    "dark mode",
    "the login page",
    "the README",
    "unit tests",
    "the build script",
    "keyboard shortcuts",
    "the settings panel",
    "error messages",
    "the API docs",
    "memory usage",
    "the CI pipeline",
    "mobile layout",
    "search results",
    "date formatting",
)
ISSUE_VERBS = ("Fix", "Improve", "Add support for", "Refactor", "Document", "Crash in")
MR_VERBS = ("Update", "Bump", "Rewrite", "Clean up", "Speed up")


@dataclass(frozen=True)
class Issue:
    iid: int
    title: str
    author: str
    state: str
    description: str


@dataclass(frozen=True)
class MergeRequest:
    iid: int
    title: str
    author: str
    state: str
    source: str


@dataclass(frozen=True)
class Project:
    namespace: str
    name: str
    description: str
    stars: int
    issues: tuple[Issue, ...]
    merge_requests: tuple[MergeRequest, ...]
    members: tuple[tuple[str, str], ...]

    @property
    def path(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class GitLab:
    """The seeded users and projects (never changed; episodes change a :class:`GitLabState`)."""

    seed: int
    users: tuple[tuple[str, str], ...]
    projects: tuple[Project, ...]
    starred: frozenset[str]

    def project_at(self, path: str) -> Project | None:
        """The project whose path (``namespace/name``) is ``path``, as in its URLs and buttons."""
        return next((p for p in self.projects if p.path == path), None)

    def project(self, name: str) -> Project | None:
        folded = name.strip().lower()
        return next((p for p in self.projects if folded in (p.name.lower(), p.path.lower())), None)

    def user(self, name: str) -> str | None:
        """The username of a username or full name, or ``None``."""
        folded = name.strip().lstrip("@").lower()
        return next((u for u, full in self.users if folded in (u.lower(), full.lower())), None)


@dataclass
class GitLabState:
    """What an episode changes: stars, new issues, issue states and members."""

    gitlab: GitLab
    starred: set[str] = field(default_factory=set)
    new_issues: dict[str, list[Issue]] = field(default_factory=dict)
    issue_states: dict[tuple[str, int], str] = field(default_factory=dict)
    members: dict[str, dict[str, str]] = field(default_factory=dict)

    @classmethod
    def fresh(cls, gitlab: GitLab) -> GitLabState:
        return cls(gitlab, set(gitlab.starred))

    def issues(self, project: Project) -> list[Issue]:
        return [
            Issue(
                i.iid, i.title, i.author, self.issue_states.get((project.path, i.iid), i.state), i.description
            )
            for i in (*project.issues, *self.new_issues.get(project.path, ()))
        ]

    def member_roles(self, project: Project) -> dict[str, str]:
        return {**dict(project.members), **self.members.get(project.path, {})}

    def stars(self, project: Project) -> int:
        return project.stars + (project.path in self.starred) - (project.path in self.gitlab.starred)


@cache
def load_gitlab(seed: int) -> GitLab:
    """The GitLab data of ``seed``, built once per process."""
    rng = random.Random(f"webarena-gitlab-{seed}")
    usernames = [u for u, _ in PEOPLE]
    projects = []
    for name in PROJECTS:
        namespace = rng.choice(usernames[:8])
        titles = rng.sample([f"{v} {s}" for v in ISSUE_VERBS for s in ISSUE_SUBJECTS], rng.randint(3, 12))
        issues = tuple(
            Issue(
                i + 1,
                t,
                rng.choice(usernames),
                rng.choice(("opened", "opened", "closed")),
                f"Details about: {t.lower()}.",
            )
            for i, t in enumerate(titles)
        )
        mr_titles = rng.sample([f"{v} {s}" for v in MR_VERBS for s in ISSUE_SUBJECTS], rng.randint(1, 6))
        mrs = tuple(
            MergeRequest(
                i + 1, t, rng.choice(usernames), rng.choice(("opened", "merged", "closed")), f"branch-{i + 1}"
            )
            for i, t in enumerate(mr_titles)
        )
        others = rng.sample([u for u in usernames if u not in (namespace, ME)], rng.randint(1, 5))
        members = ((namespace, "Owner"), *((u, rng.choice(ROLES)) for u in others))
        description = f"{name.replace('-', ' ').capitalize()}: a small open-source project."
        projects.append(Project(namespace, name, description, rng.randint(0, 900), issues, mrs, members))
    starred = frozenset(p.path for p in rng.sample(projects, 4))
    return GitLab(seed, PEOPLE, tuple(projects), starred)


class GitLabSite(Site[GitLabState]):
    host = "gitlab.local"
    title = "GitLab"
    title_template = "{} · GitLab"
    searches = {"filter": "/"}

    def navigation(self) -> Node:
        return group("navigation", link("Projects", self.url()), text(f"@{ME}"))

    def page(self, request: Request) -> Page:
        if request.path == "/":
            query = request.get("q").lower()
            found = [p for p in self.state.gitlab.projects if query in p.path.lower()]
            rows = [
                [
                    link(p.path, self.url(f"/{p.path}")),
                    text(p.description),
                    text(f"Stars: {self.state.stars(p)}"),
                ]
                for p in found
            ]
            return self.headed(
                "Projects",
                search_box("Filter by name", "filter", request.get("q")),
                listing(rows, empty="No projects found"),
            )
        path, _, section = request.path.strip("/").partition("/-/")
        project = self.state.gitlab.project_at(path)
        if project is None:
            raise NotFound(request.path)
        base = f"/{project.path}"
        if not section:
            starred = project.path in self.state.starred
            return self.frame(
                project.path,
                heading(project.name),
                text(project.description),
                button("Unstar" if starred else "Star", "star", project.path),
                text(f"Stars: {self.state.stars(project)}"),
                link("Issues", self.url(f"{base}/-/issues")),
                link("Merge requests", self.url(f"{base}/-/merge_requests")),
                link("Members", self.url(f"{base}/-/project_members")),
            )
        kind, _, rest = section.partition("/")
        if kind == "issues" and not rest:
            return self._tabbed(
                project,
                "issues",
                self.state.issues(project),
                request.get("state", "opened"),
                {"opened": "Open", "closed": "Closed"},
                lambda i: f"#{i.iid} opened by {i.author}",
                link("New issue", self.url(f"{base}/-/issues/new")),
            )
        if kind == "issues" and rest == "new":
            return self.frame(
                f"New Issue · {project.path}",
                heading("New Issue"),
                textbox("Title", "title", required=True),
                textbox("Description", "description"),
                button("Create issue", "new_issue", project.path),
            )
        if kind == "issues" and rest.isdigit():
            issue = next((i for i in self.state.issues(project) if i.iid == int(rest)), None)
            if issue is not None:
                closed = issue.state == "closed"
                return self.frame(
                    f"{issue.title} (#{issue.iid}) · Issues",
                    heading(issue.title),
                    text(f"{'Closed' if closed else 'Open'} Issue created by {issue.author}"),
                    text(issue.description),
                    button(
                        "Reopen issue" if closed else "Close issue",
                        "issue_state",
                        project.path,
                        str(issue.iid),
                    ),
                )
        if kind == "merge_requests" and not rest:
            return self._tabbed(
                project,
                "merge requests",
                project.merge_requests,
                request.get("state", "opened"),
                {s: s.capitalize() for s in ("opened", "merged", "closed")},
                lambda m: f"!{m.iid} created by {m.author}",
            )
        if kind == "merge_requests" and rest.isdigit():
            mr = next((m for m in project.merge_requests if m.iid == int(rest)), None)
            if mr is not None:
                return self.frame(
                    f"{mr.title} (!{mr.iid}) · Merge requests",
                    heading(mr.title),
                    text(f"{mr.state.capitalize()} Merge request !{mr.iid} created by {mr.author}"),
                    text(f"Merges {mr.source} into main"),
                )
        if kind == "project_members" and not rest:
            rows = [[text(u), text(r)] for u, r in self.state.member_roles(project).items()]
            return self.frame(
                f"Members · {project.path}",
                heading("Project members"),
                listing(rows),
                textbox("Username or name", "member"),
                combobox("Role", "role", ROLES, ROLES[0]),
                button("Invite", "invite", project.path),
            )
        raise NotFound(request.path)

    def _tabbed(
        self,
        project: Project,
        noun: str,
        items: Sequence[Issue | MergeRequest],
        state: str,
        tabs: dict[str, str],
        byline: Callable[[Issue | MergeRequest], str],
        *above: Node,
    ) -> Page:
        """A project's issues or merge requests (``noun``) in ``state``, under a tab a state and ``All``.

        ``tabs``: each state's tab label; ``byline``: the text under an item's title; ``above``:
        what stands between the tabs and the items.
        """
        if state not in (*tabs, "all"):
            raise NotFound(state)
        base = f"/{project.path}/-/{noun.replace(' ', '_')}"
        tablist = group(
            "tablist",
            *(
                link(f"{label} {sum(i.state == s for i in items)}", self.url(base, state=s))
                for s, label in tabs.items()
            ),
            link(f"All {len(items)}", self.url(base, state="all")),
        )
        rows = [
            [link(i.title, self.url(f"{base}/{i.iid}")), text(byline(i))]
            for i in items
            if state in ("all", i.state)
        ]
        return self.frame(
            f"{noun.capitalize()} · {project.path}",
            tablist,
            *above,
            listing(rows, empty=f"There are no {noun} to show."),
        )

    def operate(self, op: str, args: tuple[str, ...], values: Mapping[str, str]) -> Outcome:
        project = self.state.gitlab.project_at(args[0]) if args else None
        if project is None:
            raise NotFound(op)
        base = f"/{project.path}"
        if op == "star":
            self.state.starred ^= {project.path}
            return Outcome(self.url(base))
        if op == "issue_state":
            key = (project.path, int(args[1]))
            issue = next(i for i in self.state.issues(project) if i.iid == key[1])
            self.state.issue_states[key] = "opened" if issue.state == "closed" else "closed"
            return Outcome(self.url(f"{base}/-/issues/{key[1]}"))
        if op == "new_issue":
            title = collapse_spaces(values.get("title", ""))
            if not title:
                return Outcome(self.url(f"{base}/-/issues/new"), "Title can't be blank")
            iid = len(self.state.issues(project)) + 1
            issue = Issue(iid, title, ME, "opened", values.get("description", "").strip())
            self.state.new_issues.setdefault(project.path, []).append(issue)
            return Outcome(self.url(f"{base}/-/issues/{iid}"))
        if op == "invite":
            user = self.state.gitlab.user(values.get("member", ""))
            role = values.get("role", ROLES[0])
            if user is None or role not in ROLES:
                return Outcome(self.url(f"{base}/-/project_members"), "User not found.")
            if self.state.member_roles(project).get(user) == "Owner":
                return Outcome(self.url(f"{base}/-/project_members"), "The owner's role cannot be changed.")
            self.state.members.setdefault(project.path, {})[user] = role
            return Outcome(self.url(f"{base}/-/project_members"), f"{user} was added as {role}.")
        raise NotFound(op)
