"""``okfgit mcp``: serve the knowledge base to agents over MCP (stdio), and register the
server with an agent (``install``, ``uninstall``, ``status``)."""

from __future__ import annotations

from pathlib import Path

import click

from okfgit.commands._common import repo_option, run_option, workspace


@click.group("mcp", invoke_without_command=True)
@repo_option
@run_option
@click.pass_context
def mcp_cmd(click_ctx: click.Context, repo: Path | None, run: str | None) -> None:
    """Serve the knowledge base over the Model Context Protocol on stdin/stdout:
    the tools search, cat, ls, links and status read every tier at HEAD (kept warm,
    refreshed when a tier's HEAD moves), and note and log write to the active run's
    job tier only. Each tier's index.md files are resources okf://<tier>/<path>.
    Needs the MCP SDK: pip install 'okfgit[mcp]'."""
    if click_ctx.invoked_subcommand is not None:
        return
    from okfgit.verbs import mcp, mcp_stdio

    mcp_stdio.require_sdk()
    ctx, _ = workspace(repo, run)  # fail now, as the CLI would, when --repo is not a repository
    mcp_stdio.serve(mcp.Reader(ctx, repo, run))
