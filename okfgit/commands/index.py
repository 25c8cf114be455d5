from __future__ import annotations

from pathlib import Path

import click

from okfgit.verbs import index as indexing
from okfgit import plan as plan_mod
from okfgit.commands._common import emit_json, json_option, repo_option, run_option, scope_option, workspace


@click.command("index")
@scope_option("all", allow_all=True)
@click.option("--check", is_flag=True, help="Write nothing; exit 2 and list the index files that are stale.")
@click.option("--dry-run", is_flag=True, help="Show the commits that would be made, as diffs; write nothing.")
@repo_option
@run_option
@json_option
def index_cmd(scope: str, check: bool, dry_run: bool, repo: Path | None, run: str | None, as_json: bool) -> int:
    """Regenerate every index.md of the selected tiers from the tree at HEAD.

    Each folder's index lists its concepts (by file name) and then its subfolders, as
    "- [Title](path) — one sentence" taken from the frontmatter. A hand-written intro
    above the list is kept, and the root index declares okf_version "0.2". One commit
    per tier that changes (operation `index`); a tier already up to date is left alone.
    With --check, exit 2 when any index is stale (0 otherwise).
    """
    ctx, ws = workspace(repo, run)
    if check or dry_run:
        result = indexing.plan_index(ctx, ws, scope, check=check)
    else:
        result = indexing.regenerate_indexes(ctx, ws, scope)
    if as_json:
        emit_json(result.to_json())
    elif dry_run:
        text = plan_mod.render(result.plan)
        if text:
            click.echo(text)
        _echo_status(result, check=True)
    else:
        _echo_status(result, check)
    return result.exit_code


def _echo_status(result: indexing.IndexRun, check: bool) -> None:
    for item in result.tiers:
        where = item.tier.root
        if not item.stale:
            click.echo(f"{item.tier.label}: every index is up to date ({where})")
        elif check or item.commit is None:
            for path in item.stale:
                click.echo(f"{item.tier.label}: stale {item.tier.repo_path_of(path)}")
        else:
            click.echo(f"{item.tier.label}: regenerated {len(item.stale)} index file"
                       f"{'s' if len(item.stale) != 1 else ''} in {where} ({item.commit[:7]})")
    for note in result.skipped:
        click.echo(f"note: {note}")
