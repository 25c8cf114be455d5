from __future__ import annotations

from pathlib import Path

import click

from okfgit.flows import concepts
from okfgit.commands._common import emit_json, json_option, repo_option, run_option, scope_option, warn, workspace
from okfgit.errors import UsageError


@click.command("init")
@scope_option("project")
@repo_option
@run_option
@click.option("--remote", "remote_url", default=None, metavar="URL",
              help="Global tier only: exchange it through this git remote. A remote with history "
                   "becomes the tier (merged by concept with a local tier that has its own); an "
                   "empty remote receives the local tier.")
@json_option
def init_cmd(scope: str, repo: Path | None, run: str | None, remote_url: str | None, as_json: bool) -> None:
    """Bootstrap a tier: create its repository if needed (global, job), write its
    root index.md and make the first commit. Running it again changes nothing.
    With --remote (global tier): take the knowledge from, or send it to, a git remote."""
    ctx, ws = workspace(repo, run, new_run=True)
    if remote_url is not None:
        if scope != "global":
            raise UsageError("--remote is for the global tier: use `okfgit init --scope global --remote URL`")
        from okfgit.verbs import remote

        attached = remote.attach(ctx, ws, remote_url)
        if as_json:
            emit_json({"tier": "global", "root": str(ws.tier("global").root), "commit": attached.commit,
                       "remote": attached.url, "integrated": attached.report.integrated,
                       "pushed": attached.report.pushed, "message": attached.message})
        else:
            click.echo(attached.message)
        warn(attached.warnings)
        return
    written = concepts.init_tier(ctx, ws, scope)
    if as_json:
        emit_json(written.to_json())
    else:
        click.echo(written.message + (f" ({written.commit[:7]})" if written.commit else ""))
