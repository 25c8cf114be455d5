from __future__ import annotations

from pathlib import Path

import click

from okfgit.commands._common import emit_json, json_option, repo_option, run_option, warn, workspace


@click.command("status")
@repo_option
@run_option
@json_option
def status_cmd(repo: Path | None, run: str | None, as_json: bool) -> int:
    """Show what `okfgit sync` would do, writing nothing: captures pending,
    conflicts, unreadable memory files, stale projections, which capture switch
    applies and why, and whether the git and Claude Code hooks are installed.

    Exit 0 when nothing needs a person (sync may still have work to do), 2 when something
    does: a needs-merge sibling, a memory file okfgit cannot capture or has no tier for, a
    concept projection skips, a git hook that failed since the last successful sync."""
    from okfgit.verbs import status

    ctx, ws = workspace(repo, run)
    st = status.status(ctx, ws)
    if as_json:
        emit_json(st.to_json())
    else:
        click.echo(status.render(st))
    warn(st.projection.warnings)
    return st.exit_code
