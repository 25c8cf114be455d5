"""``okfgit merge-driver``: what git runs to merge a tier's ``index.md``, ``log.md`` and concepts."""

from __future__ import annotations

from pathlib import Path

import click


@click.command("merge-driver")
@click.argument("base", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("ours", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("theirs", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("marker_size", type=int, default=7, required=False)
@click.argument("path", default="", required=False)
def merge_driver_cmd(base: Path, ours: Path, theirs: Path, marker_size: int, path: str) -> int:
    """git's merge driver for the project tier's files: git runs it, you do not.
    `.okf/.gitattributes` names it for `.okf/**/*.md` and `okfgit hooks install` sets
    it up in git config as `okfgit merge-driver %O %A %B %L %P`: BASE, OURS and THEIRS
    are files holding the merge base's, our and their version, MARKER_SIZE is the
    length of git's conflict markers, PATH the file's path in the repository.

    index.md takes both sides' entries in okfgit's order, log.md both sides' entries by
    date, a concept each side's frontmatter keys. OURS receives the result. Exit 0:
    merged cleanly; exit 1: what both sides changed two ways has conflict markers on its
    lines alone (named on stderr). Anything okfgit cannot merge (not UTF-8, not its
    kind, an internal failure) is merged by `git merge-file`, as git would without
    the driver.
    """
    from okfgit.context import Context
    from okfgit.verbs import merge_driver

    result = merge_driver.merge(Context.from_process(), base, ours, theirs, marker_size, path)
    for conflict in result.conflicts:
        click.echo(f"okfgit: {path}: {conflict}", err=True)
    if result.fallback:
        click.echo(f"okfgit: {path}: merged as text by git merge-file ({result.fallback})", err=True)
    return result.exit_code
