"""The read verbs' text output: what ``okfgit ls``, ``links`` and ``search`` print, and
what the MCP tools of the same names return as text (one rendering for both)."""

from __future__ import annotations

import base64
from typing import Any

from okfgit.knowledge.cards import TierCard
from okfgit.knowledge.merged import Hit, Merged
from okfgit.verbs import nav


def lifecycle_marks(view: Merged, concept: TierCard) -> list[str]:
    """``[deprecated → <successor>]`` and ``[stale since <instant>]``, as they apply."""
    out = []
    if concept.deprecated:
        after = ", ".join(concept.superseded_by)
        out.append(f"[deprecated \u2192 {after}]" if after else "[deprecated]")
    if concept.is_stale(view.now()):
        out.append(f"[stale since {concept.stale_after}]")
    return out


def lifecycle_notes(view: Merged, concept: TierCard) -> list[str]:
    """What ``cat`` says on stderr beside the citation about a concept's lifecycle."""
    out = []
    if concept.deprecated:
        after = ", ".join(concept.superseded_by)
        out.append(f"deprecated: superseded by {after}" if after else "deprecated: no successor named")
    if concept.is_stale(view.now()):
        out.append(f"stale: since {concept.stale_after} (stale_after)")
    return out


def concept_line(view: Merged, concept: TierCard, marks: tuple[str, ...] = ()) -> str:
    """``<citation>  [Type] Title — Description  [deprecated → x] [stale since t]  (shadows ...)``."""
    kind = f"[{concept.type}] " if concept.type else ""
    text = f"{concept.citation}  {kind}{concept.title}"
    if concept.description:
        text += f" \u2014 {concept.description}"
    life = lifecycle_marks(view, concept)
    if life:
        text += "  " + " ".join(life)
    notes = list(marks) + [f"shadows {c.citation}" for c in view.shadows(concept)]
    hider = view.shadowed_by(concept)
    if hider is not None:
        notes.append(f"shadowed by {hider.citation}")
    return text + (f"  ({'; '.join(notes)})" if notes else "")


def listing_lines(view: Merged, listing: nav.Listing) -> list[str]:
    where = f"{listing.tier + ':' if listing.tier else ''}{listing.path or '/'}"
    lines = [f"# {where}  (tiers: {', '.join([listing.tier] if listing.tier else view.labels) or 'none'})"]
    for folder in listing.folders:
        name = folder.path.rsplit("/", 1)[-1]
        count = f"{folder.concepts} concept" + ("" if folder.concepts == 1 else "s")
        lines.append(f"{name}/  {count}  [{', '.join(folder.tiers)}]  {folder.description}")
    lines += [concept_line(view, concept) for concept in listing.concepts]
    lines += [f"{hit.citation}  unreadable: {hit.problem}" for hit in listing.problems]
    if not (listing.folders or listing.concepts or listing.problems):
        lines.append("(no concepts here)")
    return lines


def links_lines(view: Merged, report: nav.LinkReport) -> list[str]:
    head = " ".join([f"# {report.concept.citation}"] + lifecycle_marks(view, report.concept))
    lines = [head, f"outgoing ({len(report.outgoing)}):"]
    for out in report.outgoing:
        shown = f"[[{out.target}]]" if out.kind == "wiki" else out.target
        where = out.hit.citation if out.hit else (out.path or "")
        status = "" if out.status == "ok" else out.status
        marks = lifecycle_marks(view, out.hit.concept) if out.hit and out.hit.concept else []
        lines.append(f"  line {out.line}  {shown}  -> {' '.join(x for x in [where, status, *marks] if x)}")
    lines.append(f"backlinks ({len(report.backlinks)}):")
    for back in report.backlinks:
        shown = f"[[{back.target}]]" if back.kind == "wiki" else back.target
        after = "".join(f"  {m}" for m in lifecycle_marks(view, back.source))
        lines.append(f"  {back.source.citation}  line {back.line}  {shown}{after}")
    return lines


def cat_json(view: Merged, hit: Hit, data: bytes) -> dict[str, Any]:
    """``cat --json``: the hit's fields plus ``content`` (UTF-8 text) or ``content_base64``."""
    out = nav.hit_json(view, hit)
    try:
        out["content"] = data.decode("utf-8")
    except UnicodeDecodeError:
        out["content_base64"] = base64.b64encode(data).decode("ascii")
    return out


def similar_lines(view: Merged, concept: TierCard, found: nav.AlikeFound) -> list[str]:
    """``search --similar``: each concept alike ``concept``, most alike first, with the score."""
    if not found.hits:
        return [f"no concept is like {concept.citation}"]
    lines = [f"{a.score:.2f}  " + concept_line(view, a.concept, ("near-duplicate",) if a.near_duplicate else ())
             for a in found.hits]
    if found.more:
        lines.append(f"{found.more} more alike concept{'s' if found.more != 1 else ''} not shown: raise the limit "
                     "(0 for all)")
    return lines


def similar_json(view: Merged, found: nav.AlikeFound) -> dict[str, object]:
    return {"results": [{"score": a.score, "near_duplicate": a.near_duplicate, **nav.concept_json(view, a.concept)}
                        for a in found.hits], "more": found.more}
