"""Reading the knowledge base the way agents navigate it: the active tiers at HEAD as one view.

Precedence is by ``okf_id``: when several tiers hold a concept with the same ``okf_id``,
only the most specific one (job > project > global) is *visible*; it *shadows* the
others. Concepts without an ``okf_id`` are always visible. Nothing here reads the
working tree: uncommitted edits are not knowledge yet (DESIGN.md rule 1).
"""

from __future__ import annotations

import difflib
import posixpath
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from okfgit import index, links, okf
from okfgit.errors import UsageError, ValidationError
from okfgit.kb import Concept, Snapshot, snapshot
from okfgit.tiers import TIER_NAMES, Workspace

_CITED_OID = re.compile(r"@([0-9a-f]{4,40})$")


@dataclass(frozen=True)
class Hit:
    """One blob at HEAD in one tier: a concept, an index, a log or any other file."""

    tier: str
    path: str
    oid: str
    concept: Concept | None = None
    problem: str | None = None

    @property
    def citation(self) -> str:
        return f"{self.tier}:{self.path}@{self.oid[:7]}"


def _key(concept: Concept) -> tuple[str, str]:
    return concept.tier, concept.path


class View:
    """The selected tiers at HEAD, most specific first, with okf_id precedence applied."""

    def __init__(self, snapshots: Sequence[Snapshot]) -> None:
        self.snapshots = list(snapshots)
        self._by_label = {s.tier.label: s for s in self.snapshots}
        self._rank = {label: i for i, label in enumerate(self._by_label)}
        self._names: dict[str | None, dict[str, Concept]] = {}
        self._tier_concepts: dict[str, list[Concept]] = {}
        self._tier_ids: dict[str, dict[str, list[Concept]]] = {}

    @property
    def labels(self) -> list[str]:
        return list(self._by_label)

    def snapshot(self, label: str) -> Snapshot:
        return self._by_label[label]

    def rank(self, label: str) -> int:
        """0 for the most specific tier in the view."""
        return self._rank[label]

    @cached_property
    def all_concepts(self) -> list[Concept]:
        """Every parseable concept of every tier, shadowed ones included (tier order, then path)."""
        return [c for label in self.labels for c in self.in_tier(label)]

    def in_tier(self, label: str) -> list[Concept]:
        """Every parseable concept of one tier, by path (parsed once, on first use)."""
        if label not in self._tier_concepts:
            self._tier_concepts[label] = list(self._by_label[label].concepts())
        return self._tier_concepts[label]

    def _ids(self, label: str) -> dict[str, list[Concept]]:
        if label not in self._tier_ids:
            out: dict[str, list[Concept]] = {}
            for concept in self.in_tier(label):
                if concept.okf_id:
                    out.setdefault(concept.okf_id, []).append(concept)
            self._tier_ids[label] = out
        return self._tier_ids[label]

    # Precedence only needs the tiers on one side of a concept's own, so a lookup in the
    # most specific tier (the common case) never parses the others.

    def _same_id(self, concept: Concept, more_specific: bool) -> list[Concept]:
        if not concept.okf_id:
            return []
        at = self.rank(concept.tier)
        labels = self.labels[:at] if more_specific else self.labels[at + 1:]
        return [c for label in labels for c in self._ids(label).get(concept.okf_id, [])]

    def is_visible(self, concept: Concept) -> bool:
        return not self._same_id(concept, more_specific=True)

    @cached_property
    def concepts(self) -> list[Concept]:
        """The visible concepts: each okf_id once, from its most specific tier."""
        return [c for c in self.all_concepts if self.is_visible(c)]

    def shadows(self, concept: Concept) -> list[Concept]:
        """Concepts with the same okf_id in less specific tiers (when ``concept`` is visible)."""
        if not self.is_visible(concept):
            return []
        return self._same_id(concept, more_specific=False)

    def shadowed_by(self, concept: Concept) -> Concept | None:
        """The visible concept that hides ``concept``, if any."""
        above = self._same_id(concept, more_specific=True)
        return above[0] if above else None

    def names(self, label: str | None) -> dict[str, Concept]:
        """What a ``[[name]]`` can mean in tier ``label`` (None: every visible concept).

        A frontmatter ``name`` wins over a file stem; otherwise the first by path.
        """
        if label not in self._names:
            pool = self.in_tier(label) if label else self.concepts
            stems = {c.slug: c for c in reversed(pool)}
            named = {okf.one_line(c.meta.get("name")): c for c in reversed(pool) if c.meta.get("name")}
            self._names[label] = {**stems, **named}
        return self._names[label]

    def by_okf_id(self, okf_id: str) -> list[Concept]:
        return [c for c in self.concepts if c.okf_id == okf_id]

    def problems(self) -> list[Hit]:
        """Concept files that cannot be parsed (bad YAML, no frontmatter, a symlink ...)."""
        out = []
        for snap in self.snapshots:
            for path, message in sorted(snap.problems().items()):
                out.append(Hit(snap.tier.label, path, snap.entries[path].oid, None, message))
        return out

    def hit(self, label: str, path: str) -> Hit | None:
        """The blob at ``path`` in tier ``label``, parsed when it is a concept."""
        snap = self._by_label[label]
        entry = snap.entries.get(path)
        if entry is None:
            return None
        if not okf.is_concept_path(path):
            return Hit(label, path, entry.oid)
        try:
            return Hit(label, path, entry.oid, snap.concept(path))
        except ValidationError as exc:
            return Hit(label, path, entry.oid, None, str(exc))


def merged_view(ws: Workspace, scope: str = "all") -> View:
    """The tiers ``scope`` selects (default: every active tier) read at HEAD."""
    return View([snapshot(tier) for tier in ws.selected(scope)])


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
    return parsed, [_concept_hit(c) for c in pool if stem in (c.slug, okf.one_line(c.meta.get("name")))]


def _concept_hit(concept: Concept) -> Hit:
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


def resolve_ref(view: View, ref: str) -> Concept:
    """The one concept ``ref`` names (slug, frontmatter name, okf_id, path or tier:path)."""
    hit = resolve(view, ref)
    if hit.concept is None:
        raise ValidationError(hit.problem or f"{hit.citation} is not a concept (index.md, log.md and non-markdown files are not)")
    return hit.concept


def _not_found(view: View, ref: str, parsed: Ref) -> str:
    where = parsed.tier or ", ".join(view.labels) or "no tier"
    message = f"no concept or file matches {ref!r} in the tiers in view ({where})"
    if not view.labels:
        return message + "; run `okfgit init` first"
    pool = view.in_tier(parsed.tier) if parsed.tier else view.concepts
    names: dict[str, Concept] = {}
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
    concepts: list[Concept]
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
        for path in view.snapshot(label).entries:
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
    folders = [Folder(sub, tuple(tiers), _folder_description(view, tiers, sub), _count(pool, sub))
               for sub, tiers in sorted(subs.items())]
    concepts = sorted((c for c in pool if index.parent(c.path) == folder), key=lambda c: (c.path, view.rank(c.tier)))
    problems = [h for h in view.problems() if h.tier in labels and index.parent(h.path) == folder]
    return Listing(folder, parsed.tier, folders, concepts, problems)


def _folder_description(view: View, tiers: Iterable[str], folder: str) -> str:
    name = folder.rsplit("/", 1)[-1]
    for label in tiers:
        snap = view.snapshot(label)
        path = index.index_path(folder)
        if path in snap.entries:
            text = snap.blob(path).decode("utf-8", errors="replace")
            return index.describe_folder(index.split_intro(text), name)
    return f"Concepts under {name}/."


def _count(pool: Iterable[Concept], folder: str) -> int:
    return sum(1 for c in pool if c.path.startswith(folder + "/"))


# -- search -------------------------------------------------------------------------


def search(view: View, words: Sequence[str] = (), type_: str | None = None, tags: Sequence[str] = ()) -> list[Concept]:
    """Visible concepts whose type and tags match and whose title or description holds every word.

    Ranked: more words in the title first, then by path, then most specific tier.
    """
    wanted_type = okf.one_line(type_).lower() if type_ else None
    wanted_tags = {t.lower() for t in tags}
    terms = [w.lower() for w in words if w.strip()]
    ranked: list[tuple[int, str, int, Concept]] = []
    for concept in view.concepts:
        if wanted_type is not None and concept.type.lower() != wanted_type:
            continue
        if not wanted_tags <= {t.lower() for t in concept.tags}:
            continue
        title = concept.title.lower()
        text = title + "\n" + concept.description.lower()
        if not all(term in text for term in terms):
            continue
        in_title = sum(1 for term in terms if term in title)
        ranked.append((-in_title, concept.path, view.rank(concept.tier), concept))
    ranked.sort(key=lambda r: r[:3])
    return [r[3] for r in ranked]


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
    source: Concept
    kind: str
    target: str
    line: int


@dataclass(frozen=True)
class LinkReport:
    concept: Concept
    outgoing: list[OutLink]
    backlinks: list[BackLink]


def link_report(view: View, concept: Concept) -> LinkReport:
    """Where ``concept`` links to, and which visible concepts link to it (or to what it shadows)."""
    skip = _head_lines(view, concept)
    outgoing = [follow(view, concept, link, skip) for link in links.extract(concept.body)]
    targets = {_key(concept)} | {_key(c) for c in view.shadows(concept)}
    backlinks = []
    for source in view.concepts:
        for link in links.extract(source.body):
            out = follow(view, source, link)
            if out.hit is not None and (out.hit.tier, out.hit.path) in targets:
                line = link.line + _head_lines(view, source)
                backlinks.append(BackLink(source, link.kind, link.target, line))
    return LinkReport(concept, outgoing, backlinks)


def _head_lines(view: View, concept: Concept) -> int:
    """How many lines the frontmatter takes (the body is the blob's tail)."""
    data = view.snapshot(concept.tier).blob(concept.path)
    return data[: len(data) - len(concept.body)].count(b"\n")


def follow(view: View, source: Concept, link: links.Link, skip: int = 0) -> OutLink:
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
    if links.exists(target.path, view.snapshot(source.tier).entries):
        return OutLink(link.kind, link.target, line, "ok", target.path)
    return OutLink(link.kind, link.target, line, "dangling", target.path)


def _wiki_target(view: View, tier: str, name: str) -> Hit | None:
    for names in (view.names(tier), view.names(None)):
        if name in names:
            return _concept_hit(names[name])
    return None


# -- JSON shapes --------------------------------------------------------------------


def concept_json(view: View, concept: Concept) -> dict[str, Any]:
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
