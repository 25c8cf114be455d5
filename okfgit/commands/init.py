from __future__ import annotations

from pathlib import Path

import click

from okfgit.verbs import new as store
from okfgit.commands._common import emit_json, json_option, repo_option, run_option, scope_option, workspace


@click.command("init")
@scope_option("project")
@repo_option
@run_option
@json_option
def init_cmd(scope: str, repo: Path | None, run: str | None, as_json: bool) -> None:
    """Bootstrap a tier: create its repository if needed (global, job), write its
    root index.md and make the first commit. Running it again changes nothing."""
    ctx, ws = workspace(repo, run)
    written = store.init_tier(ctx, ws, scope)
    if as_json:
        emit_json({"tier": written.tier.label, "root": str(written.tier.root), "commit": written.commit,
                   "message": written.message})
    else:
        click.echo(written.message + (f" ({written.commit[:7]})" if written.commit else ""))
