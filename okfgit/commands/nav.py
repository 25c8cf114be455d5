"""The read verbs agents navigate with: ``ls``, ``cat``, ``links``, ``search``.

All read the tiers at HEAD (uncommitted edits are not knowledge yet) with okf_id
precedence job > project > global, and cite what they show as ``<tier>:<path>@<oid7>``.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from okfgit.verbs import nav
from okfgit.commands._common import emit_json, json_option, repo_option, run_option, scope_option, warn, workspace
from okfgit.knowledge.cards import Card

F = TypeVar("F", bound=Callable[..., Any])


def _reading(f: F) -> F:
    for option in (json_option, run_option, repo_option, scope_option("all", allow_all=True)):
        f = option(f)
    return f


def _view(repo: Path | None, run: str | None, scope: str) -> nav.View:
    _, ws = workspace(repo, run)
    return nav.merged_view(ws, scope)


def _line(view: nav.View, concept: Card) -> str:
    kind = f"[{concept.type}] " if concept.type else ""
    text = f"{concept.citation}  {kind}{concept.title}"
    if concept.description:
        text += f" \u2014 {concept.description}"
    notes = [f"shadows {c.citation}" for c in view.shadows(concept)]
    hider = view.shadowed_by(concept)
    if hider is not None:
        notes.append(f"shadowed by {hider.citation}")
    return text + (f"  ({'; '.join(notes)})" if notes else "")


@click.command("ls")
@click.argument("path", required=False, default="")
@_reading
def ls_cmd(path: str, scope: str, repo: Path | None, run: str | None, as_json: bool) -> None:
    """List the folders and concepts at PATH (default: the root) across the active
    tiers at HEAD, each concept cited as tier:path@oid with its type, title and
    description. PATH may name a tier, e.g. `project:decisions`; then that tier's
    concepts are listed even where a more specific tier shadows them."""
    view = _view(repo, run, scope)
    listing = nav.ls(view, path)
    if as_json:
        emit_json(nav.listing_json(view, listing))
        return
    where = f"{listing.tier + ':' if listing.tier else ''}{listing.path or '/'}"
    click.echo(f"# {where}  (tiers: {', '.join([listing.tier] if listing.tier else view.labels) or 'none'})")
    for folder in listing.folders:
        name = folder.path.rsplit("/", 1)[-1]
        count = f"{folder.concepts} concept" + ("" if folder.concepts == 1 else "s")
        click.echo(f"{name}/  {count}  [{', '.join(folder.tiers)}]  {folder.description}")
    for concept in listing.concepts:
        click.echo(_line(view, concept))
    for hit in listing.problems:
        click.echo(f"{hit.citation}  unreadable: {hit.problem}")
    if not (listing.folders or listing.concepts or listing.problems):
        click.echo("(no concepts here)")


@click.command("cat")
@click.argument("ref")
@_reading
def cat_cmd(ref: str, scope: str, repo: Path | None, run: str | None, as_json: bool) -> None:
    """Print the concept REF exactly as committed (the blob's bytes on stdout), then
    its citation on stderr as `citation: <tier>:<path>@<oid7>`.

    REF is a slug (file stem or frontmatter name), an okf_id, a KB path
    (decisions/x.md; a folder/ means its index.md), `tier:REF`, or a citation
    pasted back (`project:x.md@1234567`). Ambiguous or unknown REF: exit 2 with the
    candidates or close matches."""
    view = _view(repo, run, scope)
    hit = nav.resolve(view, ref)
    data = view.tier(hit.tier).blob(hit.path)
    cited = nav.parse_ref(view, ref).oid
    if cited and not hit.oid.startswith(cited):
        warn([f"{ref} cites blob {cited}, but HEAD now has {hit.citation}"])
    if as_json:
        out = nav.hit_json(view, hit)
        try:
            out["content"] = data.decode("utf-8")
        except UnicodeDecodeError:
            out["content_base64"] = base64.b64encode(data).decode("ascii")
        emit_json(out)
        return
    click.echo(data, nl=False)
    click.echo(f"citation: {hit.citation}", err=True)
    if hit.concept is not None:
        for shadowed in view.shadows(hit.concept):
            click.echo(f"shadows: {shadowed.citation}", err=True)
    if hit.problem:
        warn([hit.problem])


@click.command("links")
@click.argument("ref")
@_reading
def links_cmd(ref: str, scope: str, repo: Path | None, run: str | None, as_json: bool) -> None:
    """Show REF's outgoing links (each resolved and cited, or marked dangling,
    external or escapes) and its backlinks: visible concepts in any tier in view
    that link to it by relative, bundle-absolute (/x/y.md) or [[name]] link."""
    view = _view(repo, run, scope)
    report = nav.link_report(view, nav.resolve_ref(view, ref))
    if as_json:
        emit_json(nav.links_json(view, report))
        return
    click.echo(f"# {report.concept.citation}")
    click.echo(f"outgoing ({len(report.outgoing)}):")
    for out in report.outgoing:
        shown = f"[[{out.target}]]" if out.kind == "wiki" else out.target
        where = out.hit.citation if out.hit else (out.path or "")
        status = "" if out.status == "ok" else out.status
        click.echo(f"  line {out.line}  {shown}  -> {' '.join(x for x in (where, status) if x)}")
    click.echo(f"backlinks ({len(report.backlinks)}):")
    for back in report.backlinks:
        shown = f"[[{back.target}]]" if back.kind == "wiki" else back.target
        click.echo(f"  {back.source.citation}  line {back.line}  {shown}")


@click.command("search")
@click.argument("words", nargs=-1)
@click.option("--type", "type_", default=None, help="Only concepts of this OKF type (case-insensitive).")
@click.option("--tag", "tags", multiple=True, help="Only concepts carrying this tag; repeat to require several.")
@_reading
def search_cmd(words: tuple[str, ...], type_: str | None, tags: tuple[str, ...], scope: str, repo: Path | None,
               run: str | None, as_json: bool) -> None:
    """Find concepts by frontmatter (--type, --tag) and WORDS, each of which must
    appear (case-insensitive) in the title or the description. No full-text body
    search. Hits are cited and ranked: title matches first, then by path."""
    view = _view(repo, run, scope)
    hits = nav.search(view, words, type_, tags)
    if as_json:
        emit_json([nav.concept_json(view, c) for c in hits])
        return
    for concept in hits:
        click.echo(_line(view, concept))
    if not hits:
        click.echo("no matching concepts", err=True)
