"""The one REF grammar: how every verb that takes a concept (``cat``, ``links``, ``promote``)
finds it in a ``merged.Merged`` view (spec/okf-navigation.md, "REF: naming a concept").

    REF  = [TIER ":"] NAME ["@" OID]
    TIER = global | project | job | job/<run>      (job: the active run's tier)

A citation any verb prints (``project:decisions/x.md@1234567``) is a REF. NAME is tried
rule by rule; the first rule that matches anything decides, and more than one match under
it is ambiguous (exit 2, candidates listed):

1. a UUID: the concept with that ``okf_id``;
2. a KB path (``notes/x.md``, ``/notes/x.md``; ``notes/x`` when it has a ``/``; ``folder/``
   or the empty path: that folder's ``index.md``), which may name any file, not only concepts;
3. a path with a ``/`` that is the unique prefix of a concept's path;
4. a slug: the file stem, or the frontmatter ``name``;
5. the title, ignoring case;
6. the unique prefix of a slug or ``name``.

Without a TIER only visible concepts are candidates (shadowed ones are reached with
``tier:``). An ``@OID`` that is not the blob's OID at HEAD makes the reference *stale*:
``Resolved.stale`` says so, and each verb decides (the read verbs warn, ``promote`` refuses).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable

from typing import NamedTuple

from okfgit.errors import UsageError, ValidationError
from okfgit.format import concept as okf
from okfgit.format import names
from okfgit.knowledge.cards import TierCard, TierCards
from okfgit.knowledge.merged import Hit, Merged, concept_hit
from okfgit.knowledge.tiers import TIER_NAMES

_CITED_OID = re.compile(r"@([0-9a-f]{4,40})$")
_MAX_LISTED = 20


class Ref(NamedTuple):
    """A reference as typed: an optional tier label, the name itself, an optional cited blob OID."""

    text: str
    tier: str | None
    name: str
    oid: str | None


class Resolved(NamedTuple):
    """What a reference named, and the reference."""

    ref: Ref
    hit: Hit

    @property
    def concept(self) -> TierCard:
        """The concept named; ValidationError when the reference named another file."""
        if self.hit.concept is None:
            if self.hit.problem:
                raise ValidationError(unreadable(self.hit))
            raise ValidationError(f"{self.hit.citation} is not a concept "
                                  "(index.md, log.md and non-markdown files are not)")
        return self.hit.concept

    @property
    def stale(self) -> str | None:
        """Why the cited ``@oid`` is not what HEAD holds there (None when it is, or none was cited)."""
        cited = self.ref.oid
        if cited is None or self.hit.oid.startswith(cited):
            return None
        return f"stale citation: {self.ref.text} cites blob {cited}, but HEAD now has {self.hit.citation}"


def parse(view: Merged, text: str) -> Ref:
    """Split ``[tier:]name[@oid]``; ``job:`` means the job tier in view."""
    rest = text.strip()
    cited = _CITED_OID.search(rest)
    oid = cited.group(1) if cited else None
    if cited:
        rest = rest[: cited.start()]
    tier = None
    head, sep, tail = rest.partition(":")
    if sep and (head in TIER_NAMES or head.startswith("job/")):
        tier = _tier_label(view, head)
        rest = tail
    if not rest.strip() and tier is None:
        raise UsageError("empty reference: give a slug, an okf_id, a path or tier:path")
    return Ref(text, tier, rest.strip(), oid)


def _tier_label(view: Merged, name: str) -> str:
    if name == "job":
        found = [label for label in view.labels if label.startswith("job/")]
        if found:
            return found[0]
    elif name in view.labels:
        return name
    active = ", ".join(view.labels) or "none"
    raise UsageError(f"the {name} tier is not in view (tiers in view: {active}); check --scope, --run or `okfgit init`")


def kb_path(name: str) -> str:
    """``name`` as a KB path: no leading ``/``, normalised; "" for the root."""
    path = posixpath.normpath(name.lstrip("/")) if name.strip("/") else ""
    return "" if path == "." else path


def find(view: Merged, text: str) -> tuple[Ref, list[Hit]]:
    """Every blob ``text`` could mean under the first rule that matches (empty when none)."""
    ref = parse(view, text)
    name = ref.name
    if okf.is_valid_okf_id(name):
        return ref, [concept_hit(c) for c in view.visible(ref.tier, lambda t: t.with_id(name))]
    hits = _paths(view, ref)
    if hits:
        return ref, hits
    stem = name[:-3] if name.endswith(".md") else name
    path = kb_path(stem)
    rules: list[Callable[[TierCards], list[TierCard]]]
    if "/" in name:
        rules = [lambda t: t.under(path)]
    else:
        folded = name.casefold()
        rules = [lambda t: t.named(stem), lambda t: t.titled(folded), lambda t: t.prefixed(stem)]
    for rule in rules:  # each asks only the concepts it may match, in the pool's order
        found = [concept_hit(c) for c in view.visible(ref.tier, rule)]
        if found:
            return ref, found
    # an unreadable concept has no name to match but its file's: say why it cannot be shown
    labels = [ref.tier] if ref.tier else view.labels
    return ref, [h for h in view.problems() if h.tier in labels and posixpath.basename(h.path) == f"{stem}.md"]


def unreadable(hit: Hit) -> str:
    """What to say about a concept file okfgit cannot read (and why)."""
    return f"{hit.citation} is unreadable as a concept: {hit.problem}"


def _paths(view: Merged, ref: Ref) -> list[Hit]:
    """The blob at the path ``ref`` names (``x`` may mean ``x.md``), in each tier it may be in."""
    labels = [ref.tier] if ref.tier else view.labels
    path = kb_path(ref.name)
    if ref.name.endswith("/") or path == "":
        candidates = [names.index_path(path)]
    else:
        # "notes/x" may leave out ".md"; a bare word without "/" is a slug (rule 4), not a path
        candidates = [path] if path.endswith(".md") or "/" not in path else [path, path + ".md"]
    for candidate in candidates:
        hits = [h for h in (view.hit(label, candidate) for label in labels) if h is not None]
        if hits:
            return _drop_shadowed(hits) if ref.tier is None else hits
    return []


def _drop_shadowed(hits: list[Hit]) -> list[Hit]:
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


def resolve(view: Merged, text: str) -> Resolved:
    """The one blob ``text`` names; UsageError listing candidates or close matches otherwise."""
    ref, hits = find(view, text)
    if len(hits) == 1:
        return Resolved(ref, hits[0])
    if not hits:
        raise UsageError(not_found(view, ref))
    lines = [f"{text!r} is ambiguous: {len(hits)} matches; name one by tier:path or okf_id:"]
    for hit in hits[:_MAX_LISTED]:
        okf_id = hit.concept.okf_id if hit.concept else None
        lines.append(f"  {hit.citation}" + (f"  okf_id {okf_id}" if okf_id else ""))
    if len(hits) > _MAX_LISTED:
        lines.append(f"  ... and {len(hits) - _MAX_LISTED} more")
    raise UsageError("\n".join(lines))


def resolve_concept(view: Merged, text: str) -> Resolved:
    """Like ``resolve``, for a reference that must name a concept (ValidationError otherwise)."""
    found = resolve(view, text)
    found.concept  # noqa: B018 - raises when it is not one
    return found


def not_found(view: Merged, ref: Ref) -> str:
    """The message for a reference that names nothing, with up to five close names."""
    where = ref.tier or ", ".join(view.labels) or "no tier"
    message = f"no concept or file matches {ref.text!r} in the tiers in view ({where})"
    if not view.labels:
        return message + "; run `okfgit init` first"
    names: dict[str, TierCard] = {}
    for concept in view.in_tier(ref.tier) if ref.tier else view.concepts:
        names.setdefault(concept.slug, concept)
        names.setdefault(concept.path, concept)
    import difflib  # only for a name that matched nothing

    close = difflib.get_close_matches(ref.name, list(names), n=5, cutoff=0.6)
    if close:
        message += "; did you mean: " + ", ".join(f"{n} ({names[n].citation})" for n in close)
    return message
