"""The read verbs agents navigate with: ``ls``, ``cat``, ``links``, ``search``.

All read the tiers at HEAD (uncommitted edits are not knowledge yet) with okf_id
precedence job > project > global, and cite what they show as ``<tier>:<path>@<oid7>``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from okfgit.commands._common import emit_json, json_option, repo_option, run_option, scope_option, warn, workspace
from okfgit.errors import UsageError
from okfgit.knowledge import merged, refs
from okfgit.verbs import nav
from okfgit.render import nav as nav_render

F = TypeVar("F", bound=Callable[..., Any])


def _reading(f: F) -> F:
    for option in (json_option, run_option, repo_option, scope_option("all", allow_all=True)):
        f = option(f)
    return f


def _view(repo: Path | None, run: str | None, scope: str) -> merged.Merged:
    return _view_and_notes(repo, run, scope)[0]


def _view_and_notes(repo: Path | None, run: str | None, scope: str) -> tuple[merged.Merged, list[str]]:
    """The view, and the notes of the tiers ``--scope all`` left out (``Workspace.present``)."""
    _, ws = workspace(repo, run)
    return merged.merged_view(ws, scope), ws.present(scope)[1] if scope == "all" else []


def _outside(notes: list[str]) -> list[str]:
    """The notes a reader needs even when something was found: the project tier skipped
    because the command ran outside a repository."""
    return [n for n in notes if n.startswith("project tier skipped")]


@click.command("ls")
@click.argument("path", required=False, default="")
@_reading
def ls_cmd(path: str, scope: str, repo: Path | None, run: str | None, as_json: bool) -> None:
    """List the folders and concepts at PATH (default: the root) across the active
    tiers at HEAD, each concept cited as tier:path@oid with its type, title and
    description. PATH may name a tier, e.g. `project:decisions`; then that tier's
    concepts are listed even where a more specific tier shadows them."""
    view, notes = _view_and_notes(repo, run, scope)
    listing = nav.ls(view, path)
    for note in _outside(notes):
        click.echo(f"note: {note}", err=True)
    if as_json:
        emit_json(nav.listing_json(view, listing))
        return
    click.echo("\n".join(nav_render.listing_lines(view, listing)))


@click.command("cat")
@click.argument("ref")
@_reading
def cat_cmd(ref: str, scope: str, repo: Path | None, run: str | None, as_json: bool) -> None:
    """Print the concept REF exactly as committed (the blob's bytes on stdout), its
    citation first, on stderr, as `citation: <tier>:<path>@<oid7>` (a terminal shows it
    above the text; redirected, stdout holds the exact bytes).

    REF is a citation pasted back (`project:x.md@1234567`; a stale @oid is a
    warning), an okf_id, a KB path (decisions/x.md; a folder/ means its index.md),
    a slug (file stem or frontmatter name), a title or a unique prefix, optionally
    after `tier:`. Ambiguous or unknown REF: exit 2 with the candidates or close
    matches."""
    view = _view(repo, run, scope)
    found = refs.resolve(view, ref)
    hit = found.hit
    data = view.tier(hit.tier).blob(hit.path)
    if found.stale:
        warn([found.stale])
    if as_json:
        emit_json(nav_render.cat_json(view, hit, data))
        return
    # Everything about the concept goes to stderr before its bytes go to stdout (click
    # flushes each line), so a terminal shows the citation above the text.
    click.echo(f"citation: {hit.citation}", err=True)
    if hit.concept is not None:
        for shadowed in view.shadows(hit.concept):
            click.echo(f"shadows: {shadowed.citation}", err=True)
        for note in nav_render.lifecycle_notes(view, hit.concept):
            click.echo(note, err=True)
    if hit.problem:
        warn([refs.unreadable(hit)])
    click.echo(data, nl=False)


@click.command("links")
@click.argument("ref")
@_reading
def links_cmd(ref: str, scope: str, repo: Path | None, run: str | None, as_json: bool) -> None:
    """Show REF's outgoing links (each resolved and cited, or marked dangling,
    external or escapes) and its backlinks: visible concepts in any tier in view
    that link to it by relative, bundle-absolute (/x/y.md) or [[name]] link."""
    view = _view(repo, run, scope)
    found = refs.resolve_concept(view, ref)
    if found.stale:
        warn([found.stale])
    report = nav.link_report(view, found.concept)
    if as_json:
        emit_json(nav.links_json(view, report))
        return
    click.echo("\n".join(nav_render.links_lines(view, report)))


@click.command("search")
@click.argument("words", nargs=-1)
@click.option("--similar", "like", default=None, metavar="REF",
              help="List the concepts most alike REF by their words instead (near-duplicates marked), most alike "
                   "first; --type and --tag still narrow.")
@click.option("--type", "type_", default=None, help="Only concepts of this OKF type (case-insensitive).")
@click.option("--tag", "tags", multiple=True, help="Only concepts carrying this tag; repeat to require several.")
@click.option("--include-deprecated/--no-deprecated", "include_deprecated", default=True, show_default=True,
              help="List deprecated concepts (last, marked with their successor), or leave them out.")
@click.option("--limit", type=click.IntRange(min=0), default=nav.LIMIT, show_default=True,
              help="Show at most this many hits (0: all); how many more matched is said on stderr.")
@_reading
def search_cmd(words: tuple[str, ...], like: str | None, type_: str | None, tags: tuple[str, ...],
               include_deprecated: bool, limit: int, scope: str, repo: Path | None, run: str | None,
               as_json: bool) -> None:
    """Find concepts by frontmatter (--type, --tag) and WORDS, each of which must
    appear (case-insensitive) in the title or the description. No full-text body
    search. Hits are cited and ranked: current concepts first, deprecated ones last
    (marked with their successor), then title matches first, then by path. Stale
    concepts (past their stale_after) are marked. The first --limit hits are shown.

    --similar REF lists instead the concepts whose words (title, description and
    body) are most like REF's, with how alike (0 to 1); at 0.85 or more they are
    near-duplicates: one fact said twice."""
    view, notes = _view_and_notes(repo, run, scope)
    if like is not None:
        _similar(view, like, words, type_, tags, limit, as_json)
        return
    found = nav.search(view, words, type_, tags, include_deprecated, limit)
    if as_json:
        emit_json([nav.concept_json(view, c) for c in found.hits])
    else:
        for concept in found.hits:
            click.echo(nav_render.concept_line(view, concept))
        if not found.hits:
            click.echo("no matching concepts", err=True)
    for note in notes if not found.hits else _outside(notes):
        click.echo(f"note: {note}", err=True)
    if found.more_note:
        click.echo(found.more_note, err=True)


def _similar(view: merged.Merged, ref: str, words: tuple[str, ...], type_: str | None, tags: tuple[str, ...],
             limit: int, as_json: bool) -> None:
    if words:
        raise UsageError("--similar REF takes no WORDS: it compares REF's own words")
    found = refs.resolve_concept(view, ref)
    if found.stale:
        warn([found.stale])
    alike = nav.similar(view, found.concept, type_, tags, limit)
    if as_json:
        emit_json(nav_render.similar_json(view, alike))
    else:
        click.echo("\n".join(nav_render.similar_lines(view, found.concept, alike)))
