"""The three tiers (global, project, job): where each lives and which run is active.

| tier    | repository                          | KB root inside it |
| global  | ``$XDG_DATA_HOME/okf`` (own repo)    | repo root         |
| project | the project's own repo               | ``.okf/``         |
| job     | ``<repo>/runstate/<slug>/okf/``      | repo root         |

Precedence for one ``okf_id``: job over project over global.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

from okfgit.context import Context
from okfgit.errors import UsageError
from okfgit.git import config
from okfgit.git.repository import Repo
from okfgit.local import fastpath

TIER_NAMES = ("global", "project", "job")
PRECEDENCE = ("job", "project", "global")  # most specific first
PROJECT_PREFIX = ".okf"
RUNSTATE = "runstate"

_RUN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


def check_scope(value: str, allow_all: bool = False) -> str:
    allowed = TIER_NAMES + (("all",) if allow_all else ())
    if value not in allowed:
        raise UsageError(f"unknown scope {value!r}: use one of {', '.join(allowed)}")
    return value


def check_run(slug: str) -> str:
    if not _RUN.match(slug) or ".." in slug:
        raise UsageError(f"invalid run slug {slug!r}: letters, digits, '.', '_' and '-' only")
    return slug


class Tier(NamedTuple):
    """One tier: its name, the repository holding it and the KB root inside that repo."""

    name: str
    repo_path: Path
    prefix: str = ""
    run: str | None = None

    @property
    def root(self) -> Path:
        return self.repo_path / self.prefix if self.prefix else self.repo_path

    @property
    def label(self) -> str:
        return f"job/{self.run}" if self.name == "job" and self.run else self.name

    def repo_path_of(self, kb_path: str) -> str:
        """A KB-relative path as a path inside the tier's repository."""
        return f"{self.prefix}/{kb_path}" if self.prefix else kb_path

    def exists(self) -> bool:
        """The tier's repository exists (it may still have no commits)."""
        return (self.repo_path / ".git").exists()

    def open(self) -> Repo:
        """The tier's repository (``okfgit.git``), to read or to commit to."""
        return Repo.open(self.repo_path)

    def has_kb(self) -> bool:
        """The tier holds a knowledge base at HEAD: its repository exists and, for the
        project tier, ``.okf/`` is in the tree (any git repository "exists" as a project
        repo; only ``okfgit init --scope project`` gives it a tier)."""
        if not self.exists():
            return False
        repo = self.open()
        head = repo.head_commit()
        if head is None:
            return False
        return not self.prefix or repo.tree_oid(head, self.prefix) is not None


class Workspace(NamedTuple):
    """The tiers visible from one place: the project repo (if any), the run, global."""

    ctx: Context
    project_repo: Path | None
    run: str | None

    def tier(self, name: str) -> Tier:
        check_scope(name)
        if name == "global":
            return Tier("global", self.ctx.global_dir)
        if self.project_repo is None:
            raise UsageError(f"the {name} tier needs a git repository; run okfgit inside one or pass --repo")
        if name == "project":
            return Tier("project", self.project_repo, PROJECT_PREFIX)
        if not self.run:
            raise UsageError("no active run: pass --run SLUG, set $OKF_RUN, or run `okfgit run start SLUG`")
        return Tier("job", self.project_repo / RUNSTATE / self.run / "okf", run=self.run)

    def in_scope(self, scope: str) -> list[Tier]:
        """The tiers ``scope`` names, most specific first, whether or not their repositories exist.

        ``all``: global, the project tier inside a repository, the job tier when a run is
        active. A named tier that cannot exist here (no repository, no run) is a UsageError.
        """
        if scope != "all":
            return [self.tier(check_scope(scope))]
        return [self.tier(name) for name in PRECEDENCE
                if name == "global" or (self.project_repo is not None and (name == "project" or self.run))]

    def active(self) -> list[Tier]:
        """Tiers in precedence order (job, project, global) whose repositories exist."""
        return [tier for tier in self.in_scope("all") if tier.exists()]

    def require(self, name: str) -> Tier:
        """The tier ``name``, which must exist (UsageError saying how to create it otherwise)."""
        tier = self.tier(check_scope(name))
        if tier.exists():
            return tier
        if tier.name == "job":
            raise UsageError(f"run {tier.run!r} has not been started (no repository at {tier.root}); "
                             f"run `okfgit run start {tier.run}`")
        raise UsageError(f"the {tier.label} tier does not exist yet at {tier.root}; run `okfgit init --scope {name}`")

    def selected(self, scope: str) -> list[Tier]:
        """``all`` → every active tier; otherwise just that tier (it must exist)."""
        return self.active() if scope == "all" else [self.require(scope)]

    def present(self, scope: str) -> tuple[list[Tier], list[str]]:
        """Like ``selected``, but a tier whose repository is missing is skipped with a note.

        ``all`` notes a missing global or project tier (not the job tier when no run is
        active); a named scope that cannot exist at all (no repository, no run) is a
        UsageError as before.
        """
        notes: list[str] = []
        if scope == "all" and self.project_repo is None:
            notes.append("project tier skipped: not inside a git repository (pass --repo)")
        out: list[Tier] = []
        for tier in self.in_scope(scope):
            if tier.exists():
                out.append(tier)
            else:
                notes.append(f"{tier.label} tier skipped: it does not exist yet at {tier.root}")
        return out, notes


def known_runs(project_repo: Path) -> list[str]:
    """The runs this project has (``runstate/<slug>/okf`` holding a repository), by slug."""
    try:
        folders = sorted((project_repo / RUNSTATE).iterdir())
    except OSError:
        return []
    return [f.name for f in folders if (f / "okf" / ".git").exists()]


def check_known_run(ws: Workspace, run: str | None) -> None:
    """UsageError when ``run`` (a ``--run`` given by a person) names no run of the project:
    a typo must not silently select an empty tier."""
    if not run or ws.project_repo is None or ws.tier("job").exists():
        return
    runs = known_runs(ws.project_repo)
    have = f"the runs here: {', '.join(runs)}" if runs else "this project has no runs yet"
    raise UsageError(f"no run {run!r} in {ws.project_repo}; {have} (`okfgit run start {run}` starts it)")


def open_workspace(ctx: Context, repo: Path | None = None, run: str | None = None) -> Workspace:
    """Find the project repository and the active run (``--run`` > ``$OKF_RUN`` > ``okf.run``).

    Only paths and one config value: the repository is found as git finds it, walking up from
    the folder (``local/fastpath``, as the hook's no-op path does), and not opened, so a read
    that stops here (an MCP call answered from memory) loads no object."""
    project = _find(repo if repo is not None else ctx.cwd)
    if repo is not None and project is None:
        raise UsageError(f"{repo}: not inside a git repository")
    if project is not None and _is_inner_tier(project[0]):
        # Inside a job or global tier repo: the project is the repo around it.
        project = _find(project[0].parent)
    if project is not None and project[0] == ctx.global_dir.resolve():
        project = None
    active = run or ctx.environ.get("OKF_RUN")
    if not active and project is not None:
        try:
            active = config.get(ctx.environ, "okf.run", cwd=project[0], gitdir=project[1])
        except UsageError:
            active = None
    if active:
        check_run(active)
    return Workspace(ctx, project[0] if project else None, active or None)


def _find(start: Path) -> tuple[Path, Path] | None:
    """(working tree root, git dir) of the repository containing ``start``, or None."""
    try:
        found = fastpath.find_repo(str(start))
    except (fastpath.Unsure, OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{start}: the git repository here cannot be opened ({exc})") from exc
    return (Path(found[0]), Path(found[1])) if found is not None else None


def _is_inner_tier(path: Path) -> bool:
    return path.name == "okf" and path.parent.parent.name == RUNSTATE
