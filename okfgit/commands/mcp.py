"""``okfgit mcp``: serve the knowledge base to agents over MCP (stdio), and register the
server with an agent (``install``, ``uninstall``, ``status``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from okfgit.commands._common import emit_json, json_option, repo_option, run_option, warn, workspace
from okfgit.context import Context

if TYPE_CHECKING:
    from okfgit.verbs import mcp_install


@click.group("mcp", invoke_without_command=True)
@repo_option
@run_option
@click.pass_context
def mcp_cmd(click_ctx: click.Context, repo: Path | None, run: str | None) -> None:
    """Serve the knowledge base over the Model Context Protocol on stdin/stdout:
    the tools search, cat, ls, links and status read every tier at HEAD (kept warm,
    refreshed when a tier's HEAD moves), and note and log write to the active run's
    job tier only. Each tier's index.md files are resources okf://<tier>/<path>.
    Needs the MCP Python SDK, an optional extra (`pipx inject okfgit 'mcp>=2.2,<3'`
    after `pipx install .`; `okfgit mcp status` says whether it is there)."""
    if click_ctx.invoked_subcommand is not None:
        return
    from okfgit.mcp import tools as mcp
    from okfgit.mcp import stdio as mcp_stdio

    mcp_stdio.require_sdk()
    ctx, _ = workspace(repo, run)  # fail now, as the CLI would, when --repo is not a repository
    mcp_stdio.serve(mcp.Reader(ctx, repo, run))


agent_option = click.option("--agent", type=click.Choice(["claude", "codex", "cursor", "gemini"]), required=True,
                            help="Which agent's MCP config: claude, codex, cursor or gemini.")
where_option = click.option(
    "--scope", type=click.Choice(["project", "user"]), default=None,
    help="project: the repository's file (.mcp.json, .cursor/mcp.json, .gemini/settings.json; default for claude, "
         "cursor and gemini); "
         "user: the agent's own config (~/.claude.json, $CODEX_HOME/config.toml, ~/.cursor/mcp.json, "
         "~/.gemini/settings.json).",
)
dry_run_option = click.option("--dry-run", is_flag=True, help="Show what would change; write nothing.")


@mcp_cmd.command("install")
@agent_option
@where_option
@dry_run_option
@repo_option
@json_option
def install_cmd(agent: str, scope: str | None, dry_run: bool, repo: Path | None, as_json: bool) -> None:
    """Add okfgit's server entry where AGENT reads MCP servers, keeping every other
    entry and byte of the file. Running it again changes nothing."""
    from okfgit.verbs import mcp_install

    from okfgit.mcp import stdio as mcp_stdio

    ctx, ws = workspace(repo)
    change = mcp_install.plan_install(ctx, mcp_install.target(ctx, ws.project_repo, agent, scope))
    _report(ctx, change, dry_run, as_json)
    missing = mcp_stdio.sdk_missing()
    if missing is not None:
        warn([f"the MCP SDK is not installed with this okfgit, so the server {agent} starts will stop at once; "
              f"install it with: {missing}"])


@mcp_cmd.command("uninstall")
@agent_option
@where_option
@dry_run_option
@repo_option
@json_option
def uninstall_cmd(agent: str, scope: str | None, dry_run: bool, repo: Path | None, as_json: bool) -> None:
    """Remove okfgit's server entry: the file comes back exactly as it was before
    `install` (a file install created is removed) unless it changed since; then
    only okfgit's entry is taken out."""
    from okfgit.verbs import mcp_install

    ctx, ws = workspace(repo)
    change = mcp_install.plan_uninstall(ctx, mcp_install.target(ctx, ws.project_repo, agent, scope))
    _report(ctx, change, dry_run, as_json)


@mcp_cmd.command("status")
@repo_option
@json_option
def status_cmd(repo: Path | None, as_json: bool) -> None:
    """For each agent and scope: whether okfgit's server entry is installed, outdated
    or absent, in which file; whether `okfgit` is on PATH for agents to start; and
    whether the MCP SDK is installed (with the command that installs it when not)."""
    from okfgit.mcp import stdio as mcp_stdio
    from okfgit.verbs import mcp_install

    ctx, ws = workspace(repo)
    st = mcp_install.status(ctx, ws.project_repo, sdk_missing=mcp_stdio.sdk_missing())
    if as_json:
        emit_json(st.to_json())
    else:
        click.echo(mcp_install.render_status(st))


def _report(ctx: Context, change: mcp_install.Change, dry_run: bool, as_json: bool) -> None:
    from okfgit.verbs import mcp_install

    if not dry_run:
        mcp_install.apply(ctx, change)
    if as_json:
        emit_json({**change.to_json(), "dry_run": dry_run})
        return
    if dry_run:
        click.echo(change.render() or f"# nothing to do: {change.path} ({change.action})")
        return
    click.echo(change.describe())
