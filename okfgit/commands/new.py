from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from okfgit import plan as plan_mod
from okfgit.flows import concepts as store
from okfgit.commands._common import emit_json, json_option, repo_option, run_option, scope_option, workspace
from okfgit.errors import UsageError


def _editor(data: bytes) -> bytes:
    try:
        edited = click.edit(data.decode("utf-8"), extension=".md", require_save=True)
    except click.ClickException as exc:  # the editor is missing, or exited non-zero
        raise UsageError(f"the editor failed ({exc.format_message()}); nothing was written") from exc
    if edited is None:
        raise UsageError("editor closed without saving; nothing was written")
    return edited.encode("utf-8")


def _interactive() -> bool:
    return sys.stdin.isatty() and sys.stdout.isatty() and not os.environ.get("CI")


@click.command("new")
@click.argument("slug")
@scope_option("project")
@click.option("--type", "type_", default="Note", show_default=True, help="The concept's OKF type.")
@click.option("--title", default=None, help="Display title (default: from the slug).")
@click.option("--description", default=None, help="One sentence summarising the concept.")
@click.option("--tag", "tags", multiple=True, help="A kebab-case tag; repeat for more.")
@click.option("--dir", "folder", default=None, help="Subfolder inside the tier, e.g. decisions/storage.")
@click.option("--edit/--no-edit", default=None, help="Open $EDITOR before committing (default: when interactive).")
@click.option("--dry-run", is_flag=True, help="Show the commit that would be made; write nothing.")
@repo_option
@run_option
@json_option
def new_cmd(slug: str, scope: str, type_: str, title: str | None, description: str | None, tags: tuple[str, ...],
            folder: str | None, edit: bool | None, dry_run: bool, repo: Path | None, run: str | None,
            as_json: bool) -> None:
    """Create concept SLUG in a tier: writes <dir>/<slug>.md with okfgit's profile
    keys (okf_id, scope, okf_source ...) and the folder's index.md, as one commit."""
    ctx, ws = workspace(repo, run, new_run=scope == "job")  # a concept in a run creates it
    use_editor = _interactive() if edit is None else edit
    editor = _editor if use_editor and not dry_run else None

    def make() -> store.NewConcept:
        return store.new_plan(ctx, ws, slug, scope, type_=type_, title=title, description=description, tags=tags,
                              folder=folder, editor=editor)

    if dry_run:
        click.echo(plan_mod.render(make().plan))
        return
    written = store.create(ctx, ws.tier(scope), make, typed=editor is not None)
    if as_json:
        emit_json(written.to_json())
    else:
        click.echo(f"created {written.citation} ({written.commit[:7] if written.commit else ''})")
