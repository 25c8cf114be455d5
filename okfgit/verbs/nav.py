"""The read verbs agents navigate with: ``ls``, ``search``, ``links`` (``cat`` is a REF
lookup, ``knowledge.refs``), and the JSON shapes they report.

They read the merged view of the tiers at HEAD (``knowledge.merged``: okf_id precedence,
cards from the cache kept by tree diff, so a lookup parses no file). Nothing here reads
the working tree: uncommitted edits are not knowledge yet (DESIGN.md rule 1).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from okfgit.errors import UsageError
from okfgit.format import concept as okf
from okfgit.format import names
from okfgit.format.similar import THRESHOLD
from okfgit.knowledge import refs
from okfgit.knowledge.cards import Match, TierCard
from okfgit.knowledge.merged import Hit, Merged, concept_hit

if TYPE_CHECKING:  # the read verbs import markdown and index_md only where a link or an index is read
    from okfgit.format import markdown as links

# -- ls -----------------------------------------------------------------------------


class Folder(NamedTuple):
    """A subfolder at the listed path, in the tiers that have it."""

    path: str
    tiers: tuple[str, ...]
    description: str
    concepts: int


class Listing(NamedTuple):
    path: str
    tier: str | None
    folders: list[Folder]
    concepts: list[TierCard]
    problems: list[Hit]


def ls(view: Merged, where: str = "") -> Listing:
    """Folders and concepts directly at ``where`` (``[tier:]path``, default the root)."""
    parsed = refs.parse(view, where) if where.strip() else refs.Ref(where, None, "", None)
    labels = [parsed.tier] if parsed.tier else view.labels
    folder = refs.kb_path(parsed.name)
    if folder.endswith(".md"):
        found = view.visible(parsed.tier, lambda t: [c] if (c := t.card_at(folder)) is not None else [])
        if not found:
            raise UsageError(refs.not_found(view, parsed))
        return Listing(folder, parsed.tier, [], found, [])
    prefix = folder + "/" if folder else ""
    subs: dict[str, list[str]] = {}
    exists = folder == ""
    for label in labels:
        for name, entry in view.tier(label).listing(folder).items():
            exists = exists or entry.is_blob or entry.is_tree
            if entry.is_tree:
                subs.setdefault(prefix + name, []).append(label)
    if not exists:
        raise UsageError(refs.not_found(view, parsed))
    pool = view.visible(parsed.tier, lambda t: t.under(prefix))
    counts = _counts(pool, prefix)
    folders = [Folder(sub, tuple(tiers), _folder_description(view, tiers, sub), counts.get(sub, 0))
               for sub, tiers in sorted(subs.items())]
    concepts = sorted((c for c in pool if names.parent(c.path) == folder), key=lambda c: (c.path, view.rank(c.tier)))
    problems = [h for h in view.problems() if h.tier in labels and names.parent(h.path) == folder]
    return Listing(folder, parsed.tier, folders, concepts, problems)


def _folder_description(view: Merged, tiers: Iterable[str], folder: str) -> str:
    name = folder.rsplit("/", 1)[-1]
    for label in tiers:
        tier = view.tier(label)
        path = names.index_path(folder)
        if tier.oid(path) is not None:
            text = tier.blob(path).decode("utf-8", errors="replace")
            from okfgit.format import index_md as index

            return index.describe_folder(index.split_intro(text), name)
    return f"Concepts under {name}/."


def _counts(pool: Iterable[TierCard], prefix: str) -> dict[str, int]:
    """How many concepts each subfolder below ``prefix`` holds, at any depth."""
    out: dict[str, int] = {}
    for card in pool:
        rest = card.path[len(prefix):] if card.path.startswith(prefix) else ""
        if "/" in rest:
            sub = prefix + rest.split("/", 1)[0]
            out[sub] = out.get(sub, 0) + 1
    return out


# -- search -------------------------------------------------------------------------

LIMIT = 20  # hits a search shows unless told otherwise (0: all); an agent narrows rather than pages


class Found(NamedTuple):
    """One search's answer: the hits shown (ranked, at most ``limit``) and how many more matched."""

    hits: list[TierCard]
    more: int

    @property
    def more_note(self) -> str | None:
        """The line ``search`` adds when it left hits out (the CLI prints it on stderr)."""
        if not self.more:
            return None
        return (f"{self.more} more matching concept{'s' if self.more != 1 else ''} not shown: "
                "add words, a type or a tag to narrow, or a limit of 0 for all")


def search(view: Merged, words: Sequence[str] = (), type_: str | None = None, tags: Sequence[str] = (),
           include_deprecated: bool = True, limit: int = LIMIT) -> Found:
    """Visible concepts whose type and tags match and whose title or description holds every word.

    Ranked: current concepts before deprecated ones (left out when ``include_deprecated``
    is False), then more words in the title first, then by path, then most specific tier.
    The first ``limit`` are shown (0: all); ``Found.more`` counts the rest. Words are
    matched by each tier (``TierCards.matching``: the store's full-text index, or every
    card), which gives what the ranking needs; only the cards of the hits shown are read.
    """
    if limit < 0:
        raise UsageError(f"the limit must be 0 (all) or more, not {limit}")
    wanted_type = okf.one_line(type_).lower() if type_ else None
    wanted_tags = {t.lower() for t in tags}
    terms = [w.lower() for w in words if w.strip()]
    ranked: list[tuple[bool, int, str, int, Match]] = []
    for label in view.labels:
        for match in view.tier(label).matching(terms):
            deprecated = match.deprecated
            if deprecated and not include_deprecated:
                continue
            if wanted_type is not None and match.type.lower() != wanted_type:
                continue
            if wanted_tags and not wanted_tags <= {t.lower() for t in match.tag_list()}:
                continue
            if not view.is_visible(match):
                continue
            title = match.title_words
            in_title = sum(1 for term in terms if term in title)
            ranked.append((deprecated, -in_title, match.path, view.rank(label), match))
    ranked.sort(key=lambda r: r[:4])
    shown = ranked if not limit else ranked[:limit]
    wanted: dict[str, list[str]] = {}
    for r in shown:
        wanted.setdefault(r[4].tier, []).append(r[2])
    cards = {label: view.tier(label).cards_at(paths) for label, paths in wanted.items()}
    return Found([cards[r[4].tier][r[2]] for r in shown], len(ranked) - len(shown))


# -- similar ------------------------------------------------------------------------

SIMILAR_FLOOR = 0.3  # the least similarity ``search --similar`` lists: below it, two concepts share little


class Alike(NamedTuple):
    """A concept like the one asked about, and how alike the two are (0 to 1)."""

    score: float
    concept: TierCard

    @property
    def near_duplicate(self) -> bool:
        return self.score >= THRESHOLD


class AlikeFound(NamedTuple):
    """One ``search --similar``'s answer: the concepts shown, and how many more were alike."""

    hits: list[Alike]
    more: int


def similar(view: Merged, concept: TierCard, type_: str | None = None, tags: Sequence[str] = (),
            limit: int = LIMIT) -> AlikeFound:
    """The visible concepts most alike ``concept`` by their words (``knowledge.similar``), most
    alike first, at least ``SIMILAR_FLOOR``; those at ``THRESHOLD`` or above are near-duplicates.
    Deprecated concepts are not compared; ``type_`` and ``tags`` narrow as ``search`` does."""
    from okfgit.knowledge import similar

    wanted_type = okf.one_line(type_).lower() if type_ else None
    wanted_tags = {t.lower() for t in tags}
    me = (concept.tier, concept.path)
    cards: dict[tuple[str, str], TierCard] = {}

    def wanted(key: tuple[str, str]) -> bool:
        card = view.tier(key[0]).card_at(key[1])
        if key == me:
            return True
        if card is None or not view.is_visible(card):
            return False
        if wanted_type is not None and card.card.type.lower() != wanted_type:
            return False
        if wanted_tags and not wanted_tags <= {t.lower() for t in card.card.tags}:
            return False
        cards[key] = card
        return True

    index = similar.across([view.tier(label) for label in view.labels], wanted)
    query = index.probe(me) if me in index.keys else None
    if query is None:
        return AlikeFound([], 0)
    alike = [Alike(near.score, cards[near.key]) for near in index.nearest(query, SIMILAR_FLOOR, exclude={me})]
    shown = alike if not limit else alike[:limit]
    return AlikeFound(shown, len(alike) - len(shown))


# -- links --------------------------------------------------------------------------


class OutLink(NamedTuple):
    """A link written in a concept: ``status`` is ok, dangling, external or escapes.

    ``line`` counts from the top of the file, frontmatter included, so an editor can jump to it.
    """

    kind: str
    target: str
    line: int
    status: str
    path: str | None = None
    hit: Hit | None = None


class BackLink(NamedTuple):
    source: TierCard
    kind: str
    target: str
    line: int


class LinkReport(NamedTuple):
    concept: TierCard
    outgoing: list[OutLink]
    backlinks: list[BackLink]


def _key(concept: TierCard) -> tuple[str, str]:
    return concept.tier, concept.path


def link_report(view: Merged, concept: TierCard) -> LinkReport:
    """Where ``concept`` links to, and which visible concepts link to it (or to what it shadows)."""
    head, found = view.tier(concept.tier).links_of(concept.path)
    outgoing = [follow(view, concept, link, head) for link in found]
    shadowed = view.shadows(concept)
    targets = {_key(concept)} | {_key(c) for c in shadowed}
    names = {path.rsplit("/", 1)[-1] for _, path in targets}
    # What a link to them must hold: a file name (so a slug), or a frontmatter name.
    named = sorted({c.slug for c in (concept, *shadowed)} | {c.card.name for c in (concept, *shadowed) if c.card.name})
    backlinks = []
    for source in view.visible(None, lambda t: t.linking(named)):
        head, found = view.tier(source.tier).links_of(source.path)
        for link in found:
            if _links_to(view, source, link, targets, names):
                backlinks.append(BackLink(source, link.kind, link.target, link.line + head))
    return LinkReport(concept, outgoing, backlinks)


def _links_to(view: Merged, source: TierCard, link: links.Link, targets: set[tuple[str, str]], names: set[str]) -> bool:
    """``follow(view, source, link)`` lands on one of ``targets`` (whose file names are ``names``)."""
    if link.kind == "wiki":
        found = _wiki_target(view, source.tier, link.target)
        return found is not None and (found.tier, found.path) in targets
    if "%" not in link.target and not any(name in link.target for name in names):
        return False  # a markdown link names its target's file (unless percent-encoded)
    from okfgit.format import markdown as links

    target = links.resolve(source.path, link.target)
    return not target.external and not target.escapes and (source.tier, target.path) in targets


def follow(view: Merged, source: TierCard, link: links.Link, skip: int = 0) -> OutLink:
    """Resolve one link of ``source``: markdown links inside its own tier, ``[[name]]`` there first.

    ``skip`` is the number of frontmatter lines, added to the body line number.
    """
    line = link.line + skip
    if link.kind == "wiki":
        found = _wiki_target(view, source.tier, link.target)
        if found is None:
            return OutLink(link.kind, link.target, line, "dangling")
        return OutLink(link.kind, link.target, line, "ok", found.path, found)
    from okfgit.format import markdown as links

    target = links.resolve(source.path, link.target)
    if target.external:
        return OutLink(link.kind, link.target, line, "external")
    if target.escapes or target.path is None:
        return OutLink(link.kind, link.target, line, "escapes")
    hit = view.hit(source.tier, target.path)
    if hit is not None:
        return OutLink(link.kind, link.target, line, "ok", target.path, hit)
    if view.tier(source.tier).exists(target.path):
        return OutLink(link.kind, link.target, line, "ok", target.path)
    return OutLink(link.kind, link.target, line, "dangling", target.path)


def _wiki_target(view: Merged, tier: str, name: str) -> Hit | None:
    found = view.wiki(tier, name) or view.wiki(None, name)
    return concept_hit(found) if found is not None else None


# -- JSON shapes --------------------------------------------------------------------


def concept_json(view: Merged, concept: TierCard) -> dict[str, Any]:
    """The fields every read verb reports for a concept."""
    out: dict[str, Any] = {
        "citation": concept.citation,
        "tier": concept.tier,
        "path": concept.path,
        "oid": concept.oid,
        "okf_id": concept.okf_id,
        "type": concept.type,
        "title": concept.title,
        "description": concept.description,
        "tags": concept.tags,
        "status": concept.status,
        "superseded_by": concept.superseded_by,
        "stale": concept.is_stale(view.now()),
        "stale_after": concept.stale_after,
        "shadows": [c.citation for c in view.shadows(concept)],
    }
    hider = view.shadowed_by(concept)
    if hider is not None:
        out["shadowed_by"] = hider.citation
    return out


def hit_json(view: Merged, hit: Hit) -> dict[str, Any]:
    if hit.concept is not None:
        return concept_json(view, hit.concept)
    out: dict[str, Any] = {"citation": hit.citation, "tier": hit.tier, "path": hit.path, "oid": hit.oid}
    if hit.problem:
        out["problem"] = hit.problem
    return out


def listing_json(view: Merged, listing: Listing) -> dict[str, Any]:
    return {
        "path": listing.path,
        "tier": listing.tier,
        "folders": [{"path": f.path, "tiers": list(f.tiers), "description": f.description, "concepts": f.concepts}
                    for f in listing.folders],
        "concepts": [concept_json(view, c) for c in listing.concepts],
        "problems": [hit_json(view, h) for h in listing.problems],
    }


def links_json(view: Merged, report: LinkReport) -> dict[str, Any]:
    return {
        "concept": concept_json(view, report.concept),
        "outgoing": [{"kind": o.kind, "target": o.target, "line": o.line, "status": o.status, "path": o.path,
                      "citation": o.hit.citation if o.hit else None} for o in report.outgoing],
        "backlinks": [{"citation": b.source.citation, "kind": b.kind, "target": b.target, "line": b.line}
                      for b in report.backlinks],
    }
