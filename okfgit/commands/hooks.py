from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import click

from okfgit.flows import agent_hooks
from okfgit.flows import hooks
from okfgit.commands._common import emit_json, json_option, repo_option, warn, workspace
from okfgit.context import Context
from okfgit.errors import UsageError

agent_option = click.option(
    "--agent", type=click.Choice(list(agent_hooks.AGENTS)), default=None,
    help="Act on an agent's hooks instead of git's: claude = <claude home>/settings.json, "
         "gemini = ~/.gemini/settings.json.",
)
dry_run_option = click.option("--dry-run", is_flag=True, help="Show what would change; write nothing.")


@click.group("hooks")
def hooks_cmd() -> None:
    """Install, remove or inspect the hooks that keep the knowledge base and every
    agent's files current.

    Git hooks (post-checkout, post-merge, post-commit, post-rewrite) go into the folder
    git runs hooks from (core.hooksPath respected) and run `okfgit sync` after git has
    finished; they never make a git command fail. The same install sets up okfgit's merge
    driver in the repository's git config (merge.okfgit.driver), which merges the project
    tier's index.md, log.md and concepts by what they mean. With --agent claude, Claude
    Code's SessionStart, SessionEnd and PreCompact hooks are added to its settings.json; with
    --agent gemini, Gemini CLI's SessionStart, SessionEnd and PreCompress hooks to its.
    """


@hooks_cmd.command("install")
@agent_option
@dry_run_option
@repo_option
@json_option
def install_cmd(agent: str | None, dry_run: bool, repo: Path | None, as_json: bool) -> None:
    """Install okfgit's hooks. Running it again changes nothing; a hook that was already
    there is kept as <hook>.legacy and still runs first."""
    if agent:
        _agent(agent, agent_hooks.plan_install, dry_run, as_json, "added")
        return
    root = _repo_root(repo)
    ctx = Context.from_process()
    change = hooks.plan_install(root, ctx.environ)
    if not dry_run:
        hooks.apply(ctx, change)
    _report(change, dry_run, as_json)


@hooks_cmd.command("uninstall")
@agent_option
@dry_run_option
@repo_option
@json_option
def uninstall_cmd(agent: str | None, dry_run: bool, repo: Path | None, as_json: bool) -> None:
    """Remove okfgit's hooks and restore exactly what was there before (each
    <hook>.legacy back under its name). Hooks that are not okfgit's are left alone."""
    if agent:
        _agent(agent, agent_hooks.plan_uninstall, dry_run, as_json, "removed")
        return
    root = _repo_root(repo)
    ctx = Context.from_process()
    change = hooks.plan_uninstall(root, ctx.environ)
    if not dry_run:
        hooks.apply(ctx, change)
    _report(change, dry_run, as_json)


@hooks_cmd.command("status")
@repo_option
@json_option
def status_cmd(repo: Path | None, as_json: bool) -> None:
    """Per hook: ours, chained (ours, running a kept <hook>.legacy), foreign or absent;
    the folder git runs hooks from; the last hook error logged; Claude Code's hooks."""
    ctx, ws = workspace(repo)
    git_status = hooks.status(ws.project_repo, ctx.environ) if ws.project_repo else None
    agents = [agent_hooks.status(ctx, name) for name in agent_hooks.in_use(ctx)]
    if as_json:
        emit_json({"git": git_status.to_json() if git_status else None, "agents": [a.to_json() for a in agents]})
        return
    if git_status is None:
        click.echo("git hooks: not in a git repository")
    else:
        where = git_status.where
        configured = f" (core.hooksPath = {where.configured})" if where.configured else ""
        click.echo(f"git hooks in {where.path}{configured}")
        for h in git_status.hooks:
            note = " (outdated: run `okfgit hooks install`)" if h.state in ("ours", "chained") and not h.current else ""
            if h.state in ("absent", "foreign") and h.legacy:
                note = f" ({h.name}{hooks.LEGACY_SUFFIX} present)"
            click.echo(f"  {h.name:<14} {h.state}{note}")
        note = {"absent": " (run `okfgit hooks install`: until then git merges .okf/**/*.md as text)",
                "outdated": " (runs another command: `okfgit hooks install` updates it)"}.get(git_status.driver, "")
        click.echo(f"  {'merge driver':<14} {git_status.driver}{note}")
        if git_status.last_error:
            click.echo(f"last hook error ({where.log}): {git_status.last_error}")
    for agent in agents:
        click.echo(f"{agent.agent} hooks in {agent.path}: {agent.state}")
        for event, present in agent.installed.items():
            click.echo(f"  {event:<14} {'installed' if present else 'absent'}")
        if agent.problem:
            warn([agent.problem])


def _repo_root(repo: Path | None) -> Path:
    _, ws = workspace(repo)
    if ws.project_repo is None:
        raise UsageError("git hooks need a git repository: run inside one or pass --repo (or use --agent claude|gemini)")
    return ws.project_repo


def _report(change: hooks.HookChange, dry_run: bool, as_json: bool) -> None:
    where = change.where
    notes = []
    if where.configured:
        notes.append(f"core.hooksPath is {where.configured!r}: hooks in {where.path} run for every repository "
                     "that uses that folder")
    if where.in_worktree:
        notes.append(f"{where.path} is inside the working tree: git status shows files okfgit adds there")
    if as_json:
        emit_json({**change.to_json(), "dry_run": dry_run, "warnings": notes})
        return
    click.echo(f"{'would change' if dry_run else 'hooks in'} {where.path}:")
    for a in change.actions:
        click.echo(f"  {a.hook:<14} {a.action:<12} {a.detail}")
    warn(notes)


def _agent(agent: str, planner: Callable[[Context, str], agent_hooks.AgentChange], dry_run: bool, as_json: bool,
           verb: str) -> None:
    ctx = Context.from_process()
    change = planner(ctx, agent)
    if not dry_run:
        agent_hooks.apply(ctx, change)
    if as_json:
        emit_json({"agent": agent, "settings": str(change.path), "dry_run": dry_run, "changed": change.changed,
                   verb: list(change.events), "replaced": list(change.replaced)})
    elif dry_run:
        click.echo(change.render() or f"{change.path}: nothing to change")
    elif change.changed:
        fresh = [e for e in change.events if e not in change.replaced]
        parts = [f"{verb} {', '.join(fresh)}"] if fresh else []
        if change.replaced:
            parts.append(f"brought {', '.join(change.replaced)} up to date")
        click.echo(f"{change.path}: {'; '.join(parts)} hook{'s' if len(change.events) > 1 else ''}")
    else:
        click.echo(f"{change.path}: nothing to change")
    if change.reformats:
        whose = "Claude Code's" if agent == "claude" else "Gemini CLI's"
        warn([f"{change.path} {'would be' if dry_run else 'was'} rewritten in {whose} own layout (2-space "
              "JSON); every setting keeps its value and place"])
