"""``gitlab``: a GitLab-like code host at ``http://gitlab.local``.

URLs: ``/`` (projects, ``?q=`` filters by name), ``/<namespace>/<project>`` (Star button and
links), ``.../-/issues?state=opened|closed|all``, ``.../-/issues/<iid>``, ``.../-/issues/new``,
``.../-/merge_requests?state=opened|merged|closed|all``, ``.../-/merge_requests/<iid>`` and
``.../-/project_members`` (members and the invite form). The signed-in user is :data:`ME`.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache

from dreamgym_env.envs.webarena.sites import base as ui
from dreamgym_env.envs.webarena.sites.base import NotFound, Outcome, Request, Site, collapse_spaces

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
            replace(i, state=self.issue_states.get((project.path, i.iid), i.state))
            for i in (*project.issues, *self.new_issues.get(project.path, ()))
        ]

    def issue(self, project: Project, iid: int) -> Issue | None:
        return next((i for i in self.issues(project) if i.iid == iid), None)

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

    def navigation(self) -> ui.Node:
        return ui.group("navigation", self.link("Projects"), ui.text(f"@{ME}"))

    def page(self, request: Request) -> ui.Page:
        if request.path == "/":
            query = request.get("q").lower()
            found = [p for p in self.state.gitlab.projects if query in p.path.lower()]
            rows = [
                [
                    self.link(p.path, f"/{p.path}"),
                    ui.text(p.description),
                    ui.text(f"Stars: {self.state.stars(p)}"),
                ]
                for p in found
            ]
            return self.headed(
                "Projects",
                ui.search_box("Filter by name", "filter", request.get("q")),
                ui.listing(rows, empty="No projects found"),
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
                ui.heading(project.name),
                ui.text(project.description),
                ui.button("Unstar" if starred else "Star", "star", project.path),
                ui.text(f"Stars: {self.state.stars(project)}"),
                self.link("Issues", f"{base}/-/issues"),
                self.link("Merge requests", f"{base}/-/merge_requests"),
                self.link("Members", f"{base}/-/project_members"),
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
                self.link("New issue", f"{base}/-/issues/new"),
            )
        if kind == "issues" and rest == "new":
            return self.frame(
                f"New Issue · {project.path}",
                ui.heading("New Issue"),
                ui.textbox("Title", "title", required=True),
                ui.textbox("Description", "description"),
                ui.button("Create issue", "new_issue", project.path),
            )
        if kind == "issues" and rest.isdigit():
            issue = self.state.issue(project, int(rest))
            if issue is not None:
                closed = issue.state == "closed"
                return self.frame(
                    f"{issue.title} (#{issue.iid}) · Issues",
                    ui.heading(issue.title),
                    ui.text(f"{'Closed' if closed else 'Open'} Issue created by {issue.author}"),
                    ui.text(issue.description),
                    ui.button(
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
                    ui.heading(mr.title),
                    ui.text(f"{mr.state.capitalize()} Merge request !{mr.iid} created by {mr.author}"),
                    ui.text(f"Merges {mr.source} into main"),
                )
        if kind == "project_members" and not rest:
            rows = [[ui.text(u), ui.text(r)] for u, r in self.state.member_roles(project).items()]
            return self.frame(
                f"Members · {project.path}",
                ui.heading("Project members"),
                ui.listing(rows),
                ui.textbox("Username or name", "member"),
                ui.combobox("Role", "role", ROLES, ROLES[0]),
                ui.button("Invite", "invite", project.path),
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
        *above: ui.Node,
    ) -> ui.Page:
        """A project's issues or merge requests (``noun``) in ``state``, under a tab a state and ``All``.

        ``tabs``: each state's tab label; ``byline``: the text under an item's title; ``above``:
        what stands between the tabs and the items.
        """
        if state not in (*tabs, "all"):
            raise NotFound(state)
        base = f"/{project.path}/-/{noun.replace(' ', '_')}"
        tablist = ui.group(
            "tablist",
            *(
                self.link(f"{label} {sum(i.state == s for i in items)}", base, state=s)
                for s, label in tabs.items()
            ),
            self.link(f"All {len(items)}", base, state="all"),
        )
        rows = [
            [self.link(i.title, f"{base}/{i.iid}"), ui.text(byline(i))]
            for i in items
            if state in ("all", i.state)
        ]
        return self.frame(
            f"{noun.capitalize()} · {project.path}",
            tablist,
            *above,
            ui.listing(rows, empty=f"There are no {noun} to show."),
        )

    def operate(self, op: str, args: tuple[str, ...], values: Mapping[str, str]) -> Outcome:
        project = self.state.gitlab.project_at(args[0]) if args else None
        if project is None:
            raise NotFound(op)
        base = f"/{project.path}"
        if op == "star":
            self.state.starred ^= {project.path}
            return Outcome(self.url(base))
        if op == "issue_state" and (issue := self.state.issue(project, int(args[1]))) is not None:
            key = (project.path, issue.iid)
            self.state.issue_states[key] = "opened" if issue.state == "closed" else "closed"
            return Outcome(self.url(f"{base}/-/issues/{issue.iid}"))
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
            members = self.url(f"{base}/-/project_members")
            if user is None or role not in ROLES:
                return Outcome(members, "User not found.")
            if self.state.member_roles(project).get(user) == "Owner":
                return Outcome(members, "The owner's role cannot be changed.")
            self.state.members.setdefault(project.path, {})[user] = role
            return Outcome(members, f"{user} was added as {role}.")
        raise NotFound(op)
