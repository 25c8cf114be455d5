"""``remote`` and ``init --scope global --remote``: the global tier's git remote.

The remote is a plain git remote of the global tier's repository (``origin`` unless the
branch's upstream names another), so ``git remote`` in that repository works too and okfgit
respects what it finds. The exchange itself is ``flows/exchange.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from okfgit.context import Context
from okfgit.errors import IntegrityError, UsageError
from okfgit.knowledge.tiers import Workspace
from okfgit.plan import ensure_repo
from okfgit.flows import exchange
from okfgit.git.repository import Repo

DEFAULT_NAME = "origin"
INIT_TIMEOUT_S = 60.0  # init is a person at a terminal, and may download a whole KB


@dataclass(slots=True)
class Attached:
    """What ``init --scope global --remote`` did."""

    message: str
    url: str
    commit: str | None
    report: exchange.Report
    warnings: list[str] = field(default_factory=list)


def set_url(ctx: Context, ws: Workspace, url: str) -> exchange.RemoteInfo:
    """Point the global tier at ``url`` (the next sync exchanges with it, merging by concept)."""
    from okfgit import transport

    url = transport.check_url(url)
    tier = ws.tier("global")
    if not tier.exists():
        raise UsageError(f"the global tier does not exist yet at {tier.root}; run "
                         "`okfgit init --scope global --remote URL`")
    repo = tier.open()
    tg = exchange.target(repo)
    name = tg.name if tg else DEFAULT_NAME
    if repo.config_get(f"remote.{name}.url") is None:
        repo.add_remote(name, url)
    else:
        repo.set_remote_url(name, url)
    _track(repo, name, None)
    return exchange.show(ws)


def remove(ctx: Context, ws: Workspace) -> str:
    """Forget the global tier's remote (nothing on the remote or in the tier changes)."""
    tier = ws.tier("global")
    tg = exchange.target(tier.open()) if tier.exists() else None
    if tg is None:
        return "the global tier has no remote"
    repo = tier.open()
    repo.remove_remote(tg.name)
    exchange.forget(repo)
    return f"removed the global tier's remote {tg.name} ({tg.shown}); the tier and the remote are unchanged"


def attach(ctx: Context, ws: Workspace, url: str) -> Attached:
    """``init --scope global --remote URL``: a remote with history becomes the tier (merged by
    concept with a local tier that has its own); an empty remote receives the local tier."""
    from okfgit import transport
    from okfgit.flows import concepts

    url = transport.check_url(url)
    tier = ws.tier("global")
    repo = ensure_repo(ctx, tier)
    tg = exchange.target(repo)
    name = tg.name if tg else DEFAULT_NAME
    current = repo.config_get(f"remote.{name}.url")
    if current is not None and current != url:
        raise UsageError(f"the global tier already has remote {name} at {transport.public_url(current)}; "
                         "change it with `okfgit remote set URL`")
    if current is None:
        repo.add_remote(name, url)
    env = transport.environment(ctx.environ, INIT_TIMEOUT_S, own_ssh_command=bool(repo.config_get("core.sshCommand")))
    fetched = transport.fetch(repo.workdir, name, env, INIT_TIMEOUT_S)
    if not fetched.ok:
        if current is None:
            repo.remove_remote(name)
        raise IntegrityError(f"cannot fetch from {transport.public_url(url)}: {fetched.message} "
                             "(nothing was changed)")
    _track(repo, name, [r.removeprefix(f"refs/remotes/{name}/") for r in repo.refs_under(f"refs/remotes/{name}/")
                        if r != f"refs/remotes/{name}/HEAD"])
    tg = exchange.target(repo)
    assert tg is not None
    report = exchange.Report(tg.shown, fetched=True)
    empty = not exchange.has_history(repo, tg)
    exchange.integrate(ctx, tier, repo, tg, report)
    written = concepts.init_tier(ctx, ws, "global")
    if exchange.counts(repo, tg)[0]:
        exchange.push(ctx, tier, repo, tg, report, INIT_TIMEOUT_S)
    if report.unreachable is None:
        exchange.save_success(repo, tg, ctx.clock())
    what = {"fast-forward": "took the remote's history", "merge": "merged the remote's history by concept"}
    done = "the remote was empty" if empty else what.get(report.integrated or "", "the remote had nothing new")
    if report.pushed:
        done += "; pushed the local tier"
    elif report.unreachable:
        done += "; the push failed and will be retried by the next sync"
    return Attached(f"global tier at {tier.root} exchanges with {tg.shown}: {done}", tg.shown,
                    written.commit or report.merge_commit, report, list(report.warnings))


def _track(repo: Repo, name: str, branches: list[str] | None) -> None:
    """Make ``name`` the current branch's upstream (the remote branch of the same name, else
    the remote's only branch, else main or master when it has them)."""
    head = repo.head_branch()
    if head is None:
        return
    short = head[len("refs/heads/"):]
    remote_branch = short
    if branches and short not in branches:
        if len(branches) == 1:
            remote_branch = branches[0]
        else:
            remote_branch = next((b for b in ("main", "master") if b in branches), short)
    repo.config_set(f"branch.{short}.remote", name)
    if branches is not None or repo.config_get(f"branch.{short}.merge") is None:
        repo.config_set(f"branch.{short}.merge", f"refs/heads/{remote_branch}")
