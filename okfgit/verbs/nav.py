"""Reading the knowledge base the way agents navigate it: the active tiers at HEAD as one view.

Precedence is by ``okf_id``: when several tiers hold a concept with the same ``okf_id``,
only the most specific one (job > project > global) is *visible*; it *shadows* the
others. Concepts without an ``okf_id`` are always visible. Nothing here reads the
working tree: uncommitted edits are not knowledge yet (DESIGN.md rule 1). Concepts come
as ``Card``s from a cache kept by tree diff (``navcards``), so a lookup parses no file.
"""

from __future__ import annotations

import datetime as dt
import difflib
import posixpath
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from okfgit.format import index_md as index
from okfgit.format import markdown as links
from okfgit.format import concept as okf
from okfgit.format import lifecycle
from okfgit.errors import UsageError, ValidationError
from okfgit.knowledge.cards import Card, TierCards
from okfgit.knowledge.tiers import TIER_NAMES, Workspace

_CITED_OID = re.compile(r"@([0-9a-f]{4,40})$")


@dataclass(frozen=True)
class Hit:
    """One blob at HEAD in one tier: a concept, an index, a log or any other file."""

    tier: str
    path: str
    oid: str
    concept: Card | None = None
    problem: str | None = None

    @property
    def citation(self) -> str:
        return f"{self.tier}:{self.path}@{self.oid[:7]}"


def _key(concept: Card) -> tuple[str, str]:
    return concept.tier, concept.path


class View:
    """The selected tiers at HEAD, most specific first, with okf_id precedence applied."""

    def __init__(self, tiers: Sequence[TierCards], clock: Callable[[], float] = time.time) -> None:
        self.tiers = list(tiers)
        self.clock = clock  # epoch seconds: a concept is stale when now >= its stale_after
        self._by_label = {t.label: t for t in self.tiers}
        self._rank = {label: i for i, label in enumerate(self._by_label)}
        self._names: dict[str | None, dict[str, Card]] = {}
        self._tier_concepts: dict[str, list[Card]] = {}
        self._tier_ids: dict[str, dict[str, list[Card]]] = {}

    @property
    def labels(self) -> list[str]:
        return list(self._by_label)

    def now(self) -> dt.datetime:
        return lifecycle.instant_of(self.clock())

    def tier(self, label: str) -> TierCards:
        return self._by_label[label]

    def rank(self, label: str) -> int:
        """0 for the most specific tier in the view."""
        return self._rank[label]

    def in_tier(self, label: str) -> list[Card]:
        """Every parseable concept of one tier, by path."""
        if label not in self._tier_concepts:
            self._tier_concepts[label] = list(self._by_label[label].cards.values())
        return self._tier_concepts[label]

    def _ids(self, label: str) -> dict[str, list[Card]]:
        if label not in self._tier_ids:
            out: dict[str, list[Card]] = {}
            for concept in self.in_tier(label):
                if concept.okf_id:
                    out.setdefault(concept.okf_id, []).append(concept)
            self._tier_ids[label] = out
        return self._tier_ids[label]

    def _same_id(self, concept: Card, more_specific: bool) -> list[Card]:
        if not concept.okf_id:
            return []
        at = self.rank(concept.tier)
        labels = self.labels[:at] if more_specific else self.labels[at + 1:]
        return [c for label in labels for c in self._ids(label).get(concept.okf_id, [])]

    def is_visible(self, concept: Card) -> bool:
        return not self._same_id(concept, more_specific=True)

    @cached_property
    def concepts(self) -> list[Card]:
        """The visible concepts: each okf_id once, from its most specific tier."""
        out: list[Card] = []
        above: set[str] = set()  # okf_ids of the more specific tiers
        for label in self.labels:
            cards = self.in_tier(label)
            out.extend(c for c in cards if not c.okf_id or c.okf_id not in above)
            above.update(c.okf_id for c in cards if c.okf_id)
        return out

    def shadows(self, concept: Card) -> list[Card]:
        """Concepts with the same okf_id in less specific tiers (when ``concept`` is visible)."""
        if not self.is_visible(concept):
            return []
        return self._same_id(concept, more_specific=False)

    def shadowed_by(self, concept: Card) -> Card | None:
        """The visible concept that hides ``concept``, if any."""
        above = self._same_id(concept, more_specific=True)
        return above[0] if above else None

    def names(self, label: str | None) -> dict[str, Card]:
        """What a ``[[name]]`` can mean in tier ``label`` (None: every visible concept).

        A frontmatter ``name`` wins over a file stem; otherwise the first by path.
        """
        if label not in self._names:
            pool = self.in_tier(label) if label else self.concepts
            stems = {c.slug: c for c in reversed(pool)}
            named = {c.fact.name: c for c in reversed(pool) if c.fact.named}
            self._names[label] = {**stems, **named}
        return self._names[label]

    def by_okf_id(self, okf_id: str) -> list[Card]:
        return [c for c in self.concepts if c.okf_id == okf_id]

    def problems(self) -> list[Hit]:
        """Concept files that cannot be parsed (bad YAML, no frontmatter, a symlink ...)."""
        out = []
        for tier in self.tiers:
            for path, (oid, message) in sorted(tier.catalog.problems.items()):
                out.append(Hit(tier.label, path, oid, None, message))
        return out

    def hit(self, label: str, path: str) -> Hit | None:
        """The blob at ``path`` in tier ``label``, with its card when it is a concept."""
        tier = self._by_label[label]
        fact = tier.catalog.facts.get(path)
        if fact is not None:
            return Hit(label, path, fact.oid, Card(label, path, fact))
        if path in tier.catalog.problems:
            oid, message = tier.catalog.problems[path]
            return Hit(label, path, oid, None, message)
        blob = tier.oid(path)
        return Hit(label, path, blob) if blob is not None else None


def merged_view(ws: Workspace, scope: str = "all") -> View:
    """The tiers ``scope`` selects (default: every active tier) read at HEAD."""
    return View([TierCards(tier) for tier in ws.selected(scope)], ws.ctx.now)


# -- references ---------------------------------------------------------------------


@dataclass(frozen=True)
class Ref:
    """A reference as typed: an optional tier, the name itself, an optional cited blob OID."""

    tier: str | None
    name: str
    oid: str | None


def parse_ref(view: View, ref: str) -> Ref:
    """Split ``[tier:]name[@oid]``; ``job:`` means the active run's job tier."""
    text = ref.strip()
    cited = _CITED_OID.search(text)
    oid = cited.group(1) if cited else None
    if cited:
        text = text[: cited.start()]
    tier = None
    head, sep, rest = text.partition(":")
    if sep and (head in TIER_NAMES or head.startswith("job/")):
        tier = _tier_label(view, head)
        text = rest
    if not text.strip() and tier is None:
        raise UsageError("empty reference: give a slug, an okf_id, a path or tier:path")
    return Ref(tier, text.strip(), oid)


def _tier_label(view: View, name: str) -> str:
    if name == "job":
        found = [label for label in view.labels if label.startswith("job/")]
        if found:
            return found[0]
    elif name in view.labels:
        return name
    active = ", ".join(view.labels) or "none"
    raise UsageError(f"the {name} tier is not in view (tiers in view: {active}); check --scope, --run or `okfgit init`")


def _kb_path(name: str) -> str:
    path = posixpath.normpath(name.lstrip("/")) if name.strip("/") else ""
    return "" if path == "." else path


def find(view: View, ref: str) -> tuple[Ref, list[Hit]]:
    """Every blob ``ref`` could mean, best interpretation first (empty when none)."""
    parsed = parse_ref(view, ref)
    labels = [parsed.tier] if parsed.tier else view.labels
    name = parsed.name
    if okf.is_valid_okf_id(name):
        pool = view.in_tier(parsed.tier) if parsed.tier else view.concepts
        return parsed, [_concept_hit(c) for c in pool if c.okf_id == name]
    path = _kb_path(name)
    if name.endswith("/") or path == "":
        path = index.index_path(path)
    hits = [h for h in (view.hit(label, path) for label in labels) if h is not None]
    if hits:
        return parsed, _drop_shadowed(view, hits) if parsed.tier is None else hits
    if "/" in name:
        return parsed, []
    pool = view.in_tier(parsed.tier) if parsed.tier else view.concepts
    stem = name[:-3] if name.endswith(".md") else name
    hits = [_concept_hit(c) for c in pool if stem in (c.slug, c.fact.name)]
    if not hits:
        # an unreadable concept has no name to match but its file's: say why it cannot be shown
        hits = [h for h in view.problems() if h.tier in labels and posixpath.basename(h.path) == f"{stem}.md"]
    return parsed, hits


def _concept_hit(concept: Card) -> Hit:
    return Hit(concept.tier, concept.path, concept.oid, concept)


def _drop_shadowed(view: View, hits: list[Hit]) -> list[Hit]:
    """The same path in several tiers with one okf_id is one concept: keep the most specific."""
    seen: set[str] = set()
    out = []
    for hit in hits:  # already most specific first
        okf_id = hit.concept.okf_id if hit.concept else None
        if okf_id and okf_id in seen:
            continue
        if okf_id:
            seen.add(okf_id)
        out.append(hit)
    return out


def resolve(view: View, ref: str) -> Hit:
    """The one blob ``ref`` names; UsageError listing candidates or close matches otherwise."""
    parsed, hits = find(view, ref)
    if len(hits) == 1:
        return hits[0]
    if not hits:
        raise UsageError(_not_found(view, ref, parsed))
    lines = [f"{ref!r} is ambiguous: {len(hits)} matches; name one by tier:path or okf_id:"]
    for hit in hits:
        okf_id = hit.concept.okf_id if hit.concept else None
        lines.append(f"  {hit.citation}" + (f"  okf_id {okf_id}" if okf_id else ""))
    raise UsageError("\n".join(lines))


def unreadable(hit: Hit) -> str:
    """What to say about a concept file okfgit cannot read (and why)."""
    return f"{hit.citation} is unreadable as a concept: {hit.problem}"


def resolve_ref(view: View, ref: str) -> Card:
    """The one concept ``ref`` names (slug, frontmatter name, okf_id, path or tier:path)."""
    hit = resolve(view, ref)
    if hit.concept is None:
        if hit.problem:
            raise ValidationError(unreadable(hit))
        raise ValidationError(f"{hit.citation} is not a concept (index.md, log.md and non-markdown files are not)")
    return hit.concept


def _not_found(view: View, ref: str, parsed: Ref) -> str:
    where = parsed.tier or ", ".join(view.labels) or "no tier"
    message = f"no concept or file matches {ref!r} in the tiers in view ({where})"
    if not view.labels:
        return message + "; run `okfgit init` first"
    pool = view.in_tier(parsed.tier) if parsed.tier else view.concepts
    names: dict[str, Card] = {}
    for concept in pool:
        names.setdefault(concept.slug, concept)
        names.setdefault(concept.path, concept)
    close = difflib.get_close_matches(parsed.name, list(names), n=5, cutoff=0.6)
    if close:
        message += "; did you mean: " + ", ".join(f"{n} ({names[n].citation})" for n in close)
    return message


# -- ls -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Folder:
    """A subfolder at the listed path, in the tiers that have it."""

    path: str
    tiers: tuple[str, ...]
    description: str
    concepts: int


@dataclass(frozen=True)
class Listing:
    path: str
    tier: str | None
    folders: list[Folder]
    concepts: list[Card]
    problems: list[Hit]


def ls(view: View, where: str = "") -> Listing:
    """Folders and concepts directly at ``where`` (``[tier:]path``, default the root)."""
    parsed = parse_ref(view, where) if where.strip() else Ref(None, "", None)
    labels = [parsed.tier] if parsed.tier else view.labels
    folder = _kb_path(parsed.name)
    pool = view.in_tier(parsed.tier) if parsed.tier else view.concepts
    if folder.endswith(".md"):
        found = [c for c in pool if c.path == folder]
        if not found:
            raise UsageError(_not_found(view, where, parsed))
        return Listing(folder, parsed.tier, [], found, [])
    prefix = folder + "/" if folder else ""
    subs: dict[str, list[str]] = {}
    exists = folder == ""
    for label in labels:
        for path in view.tier(label).entries:
            if not path.startswith(prefix):
                continue
            exists = True
            rest = path[len(prefix):]
            if "/" in rest:
                sub = prefix + rest.split("/", 1)[0]
                if label not in subs.setdefault(sub, []):
                    subs[sub].append(label)
    if not exists:
        raise UsageError(_not_found(view, where, parsed))
    counts = _counts(pool, prefix)
    folders = [Folder(sub, tuple(tiers), _folder_description(view, tiers, sub), counts.get(sub, 0))
               for sub, tiers in sorted(subs.items())]
    concepts = sorted((c for c in pool if index.parent(c.path) == folder), key=lambda c: (c.path, view.rank(c.tier)))
    problems = [h for h in view.problems() if h.tier in labels and index.parent(h.path) == folder]
    return Listing(folder, parsed.tier, folders, concepts, problems)


def _folder_description(view: View, tiers: Iterable[str], folder: str) -> str:
    name = folder.rsplit("/", 1)[-1]
    for label in tiers:
        tier = view.tier(label)
        path = index.index_path(folder)
        if path in tier.entries:
            text = tier.blob(path).decode("utf-8", errors="replace")
            return index.describe_folder(index.split_intro(text), name)
    return f"Concepts under {name}/."


def _counts(pool: Iterable[Card], prefix: str) -> dict[str, int]:
    """How many concepts each subfolder below ``prefix`` holds, at any depth."""
    out: dict[str, int] = {}
    for card in pool:
        rest = card.path[len(prefix):] if card.path.startswith(prefix) else ""
        if "/" in rest:
            sub = prefix + rest.split("/", 1)[0]
            out[sub] = out.get(sub, 0) + 1
    return out


# -- search -------------------------------------------------------------------------


def search(view: View, words: Sequence[str] = (), type_: str | None = None, tags: Sequence[str] = (),
           include_deprecated: bool = True) -> list[Card]:
    """Visible concepts whose type and tags match and whose title or description holds every word.

    Ranked: current concepts before deprecated ones (left out when ``include_deprecated``
    is False), then more words in the title first, then by path, then most specific tier.
    """
    wanted_type = okf.one_line(type_).lower() if type_ else None
    wanted_tags = {t.lower() for t in tags}
    terms = [w.lower() for w in words if w.strip()]
    ranked: list[tuple[bool, int, str, int, Card]] = []
    for concept in view.concepts:
        if concept.deprecated and not include_deprecated:
            continue
        if wanted_type is not None and concept.type.lower() != wanted_type:
            continue
        if not wanted_tags <= {t.lower() for t in concept.tags}:
            continue
        title = concept.title.lower()
        text = title + "\n" + concept.description.lower()
        if not all(term in text for term in terms):
            continue
        in_title = sum(1 for term in terms if term in title)
        ranked.append((concept.deprecated, -in_title, concept.path, view.rank(concept.tier), concept))
    ranked.sort(key=lambda r: r[:4])
    return [r[4] for r in ranked]


# -- links --------------------------------------------------------------------------


@dataclass(frozen=True)
class OutLink:
    """A link written in a concept: ``status`` is ok, dangling, external or escapes.

    ``line`` counts from the top of the file, frontmatter included, so an editor can jump to it.
    """

    kind: str
    target: str
    line: int
    status: str
    path: str | None = None
    hit: Hit | None = None


@dataclass(frozen=True)
class BackLink:
    source: Card
    kind: str
    target: str
    line: int


@dataclass(frozen=True)
class LinkReport:
    concept: Card
    outgoing: list[OutLink]
    backlinks: list[BackLink]


def link_report(view: View, concept: Card) -> LinkReport:
    """Where ``concept`` links to, and which visible concepts link to it (or to what it shadows)."""
    outgoing = [follow(view, concept, link, concept.fact.head) for link in concept.links()]
    targets = {_key(concept)} | {_key(c) for c in view.shadows(concept)}
    names = {path.rsplit("/", 1)[-1] for _, path in targets}
    backlinks = []
    for source in view.concepts:
        for link in source.links():
            if _links_to(view, source, link, targets, names):
                backlinks.append(BackLink(source, link.kind, link.target, link.line + source.fact.head))
    return LinkReport(concept, outgoing, backlinks)


def _links_to(view: View, source: Card, link: links.Link, targets: set[tuple[str, str]], names: set[str]) -> bool:
    """``follow(view, source, link)`` lands on one of ``targets`` (whose file names are ``names``)."""
    if link.kind == "wiki":
        found = _wiki_target(view, source.tier, link.target)
        return found is not None and (found.tier, found.path) in targets
    if "%" not in link.target and not any(name in link.target for name in names):
        return False  # a markdown link names its target's file (unless percent-encoded)
    target = links.resolve(source.path, link.target)
    return not target.external and not target.escapes and (source.tier, target.path) in targets


def follow(view: View, source: Card, link: links.Link, skip: int = 0) -> OutLink:
    """Resolve one link of ``source``: markdown links inside its own tier, ``[[name]]`` there first.

    ``skip`` is the number of frontmatter lines, added to the body line number.
    """
    line = link.line + skip
    if link.kind == "wiki":
        found = _wiki_target(view, source.tier, link.target)
        if found is None:
            return OutLink(link.kind, link.target, line, "dangling")
        return OutLink(link.kind, link.target, line, "ok", found.path, found)
    target = links.resolve(source.path, link.target)
    if target.external:
        return OutLink(link.kind, link.target, line, "external")
    if target.escapes or target.path is None:
        return OutLink(link.kind, link.target, line, "escapes")
    hit = view.hit(source.tier, target.path)
    if hit is not None:
        return OutLink(link.kind, link.target, line, "ok", target.path, hit)
    if links.exists(target.path, view.tier(source.tier).entries):
        return OutLink(link.kind, link.target, line, "ok", target.path)
    return OutLink(link.kind, link.target, line, "dangling", target.path)


def _wiki_target(view: View, tier: str, name: str) -> Hit | None:
    for names in (view.names(tier), view.names(None)):
        if name in names:
            return _concept_hit(names[name])
    return None


# -- JSON shapes --------------------------------------------------------------------


def concept_json(view: View, concept: Card) -> dict[str, Any]:
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


def hit_json(view: View, hit: Hit) -> dict[str, Any]:
    if hit.concept is not None:
        return concept_json(view, hit.concept)
    out: dict[str, Any] = {"citation": hit.citation, "tier": hit.tier, "path": hit.path, "oid": hit.oid}
    if hit.problem:
        out["problem"] = hit.problem
    return out


def listing_json(view: View, listing: Listing) -> dict[str, Any]:
    return {
        "path": listing.path,
        "tier": listing.tier,
        "folders": [{"path": f.path, "tiers": list(f.tiers), "description": f.description, "concepts": f.concepts}
                    for f in listing.folders],
        "concepts": [concept_json(view, c) for c in listing.concepts],
        "problems": [hit_json(view, h) for h in listing.problems],
    }


def links_json(view: View, report: LinkReport) -> dict[str, Any]:
    return {
        "concept": concept_json(view, report.concept),
        "outgoing": [{"kind": o.kind, "target": o.target, "line": o.line, "status": o.status, "path": o.path,
                      "citation": o.hit.citation if o.hit else None} for o in report.outgoing],
        "backlinks": [{"citation": b.source.citation, "kind": b.kind, "target": b.target, "line": b.line}
                      for b in report.backlinks],
    }
