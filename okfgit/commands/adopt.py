"""``okfgit adopt``: bring an existing OKF bundle or a folder of notes into a tier."""

from __future__ import annotations

from pathlib import Path

import click

from okfgit.verbs import adopt
from okfgit import plan as plan_mod
from okfgit.commands._common import emit_json, json_option, repo_option, run_option, scope_option, warn, with_progress, workspace
from okfgit.format.words import plural


@click.command("adopt")
@click.argument("src", required=False, type=click.Path(path_type=Path))
@scope_option("project")
@click.option("--dir", "folder", default=None, metavar="SUBDIR",
              help="Where in the tier the files land (default: the tier root).")
@click.option("--dry-run", is_flag=True, help="Show the commit that would be made; write nothing.")
@repo_option
@run_option
@json_option
def adopt_cmd(src: Path | None, scope: str, folder: str | None, dry_run: bool, repo: Path | None,
              run: str | None, as_json: bool) -> None:
    """Adopt existing knowledge into a tier as ONE commit: the files under SRC are
    copied to <tier>/<SUBDIR>/ (without SRC: the files already committed in the
    tier, under SUBDIR if given).

    Only missing keys are added (okf_id, scope, title from the filename,
    description from the first sentence, okf_source: authored, and type: Note when
    there is none); every other key and every body byte stays as it was, but for
    bundle-absolute links (/x.md), which are re-rooted under SUBDIR (/SUBDIR/x.md),
    and the paths in sources[].resource and the other path-valued fields (x/y.md:
    SUBDIR/x/y.md, /x/y.md: /SUBDIR/x/y.md), each listed. Missing index.md files are written; an existing index.md keeps its
    form and gains only missing entries (so the root index links SUBDIR). Non-markdown files
    are copied byte for byte; hidden files and folders are skipped. Unreadable input (invalid
    YAML, not UTF-8, binary, symlinks, a file that would overwrite a different
    one) is listed and nothing is written (exit 2)."""
    ctx, ws = workspace(repo, run, new_run=scope == "job")  # adopting into a run creates it
    ctx = with_progress(ctx, quiet=as_json)
    if dry_run:
        result = adopt.adopt_plan(ctx, ws, src, scope, folder)
    else:
        result = adopt.adopt(ctx, ws, src, scope, folder)
    if as_json:
        emit_json({"tier": result.tier.label, "dir": result.folder, "source": result.source,
                   "commit": result.commit, "dry_run": dry_run, "adopted": result.adopted,
                   "copied": result.copied, "indexes": result.indexes, "skipped": result.skipped,
                   "notes": result.notes, "rewrites": [r.to_json() for r in result.rewrites],
                   "unresolved_in_source": [r.to_json() for r in result.unresolved]})
        return
    if dry_run:
        click.echo(plan_mod.render(result.plan) or "nothing to adopt")
    where = f"{result.tier.label}:{result.folder + '/' if result.folder else ''}"
    if result.plan.empty:
        click.echo(f"nothing to adopt in {where} (every concept already has okfgit's keys)")
    elif not dry_run:
        click.echo(f"adopted {plural(len(result.adopted), 'concept')} into {where} ({(result.commit or '')[:7]}): "
                   f"{plural(len(result.copied), 'other file')} copied as they are, "
                   f"{len(result.indexes)} index.md written")
    if result.rewrites and not dry_run:
        click.echo(f"re-rooted {plural(len(result.rewrites), 'path')} under /{result.folder}/ (bundle-absolute links, "
                   "path-valued frontmatter fields):")
        click.echo("\n".join(f"  {r}" for r in result.rewrites))
    warn(result.notes)
    warn([f"link or path did not resolve in the source either (kept as written): {r}" for r in result.unresolved])
    if result.skipped:
        warn([f"skipped hidden entries: {', '.join(result.skipped)}"])
