"""The one merge of the tiers by ``okf_id``: job over project over global.

A ``Merged`` view holds the tiers' cards (``cards.TierCards``), most specific first. When
several tiers hold a concept with the same ``okf_id``, only the one in the most specific
tier is *visible*; it *shadows* the others. Concepts without an ``okf_id`` are always
visible. A ``<stem>.needs-merge.md`` sibling (an agent's variant capture set aside for a
person) is listed like any file of its tier but is not knowledge yet: it shadows nothing,
is never projected and never answers for its ``okf_id``; neither does a card with a flaw
(a concept without a string ``type``), and projection needs a valid ``okf_id``.

Projection, capture and the read verbs all ask this view; precedence is decided here only.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Sequence
from functools import cached_property

from typing import NamedTuple

from okfgit.format import concept as okf
from okfgit.format import lifecycle
from okfgit.format.names import is_needs_merge
from okfgit.knowledge.cards import Match, TierCard, TierCards
from okfgit.knowledge.tiers import Workspace


class Hit(NamedTuple):
    """One blob in one tier: a concept (with its card), an index, a log or any other file."""

    tier: str
    path: str
    oid: str
    concept: TierCard | None = None
    problem: str | None = None

    @property
    def citation(self) -> str:
        return f"{self.tier}:{self.path}@{self.oid[:7]}"


def concept_hit(concept: TierCard) -> Hit:
    return Hit(concept.tier, concept.path, concept.oid, concept)


class Duplicate(NamedTuple):
    """Two concepts of one tier with one ``okf_id``: the merge keeps the first by path."""

    kept: TierCard
    dropped: TierCard


class Merged:
    """The given tiers, most specific first, with ``okf_id`` precedence applied."""

    def __init__(self, tiers: Sequence[TierCards], clock: Callable[[], float] = time.time) -> None:
        self.tiers = list(tiers)
        self.clock = clock  # epoch seconds: a concept is stale when now >= its stale_after
        self._by_label = {t.label: t for t in self.tiers}
        self._rank = {label: i for i, label in enumerate(self._by_label)}
        labels = list(self._by_label)
        self._above = {label: labels[:i] for i, label in enumerate(labels)}  # the more specific tiers
        self._below = {label: labels[i + 1:] for i, label in enumerate(labels)}

    def now(self) -> dt.datetime:
        return lifecycle.instant_of(self.clock())

    @property
    def labels(self) -> list[str]:
        return list(self._by_label)

    def tier(self, label: str) -> TierCards:
        return self._by_label[label]

    def rank(self, label: str) -> int:
        """0 for the most specific tier in the view."""
        return self._rank[label]

    def in_tier(self, label: str) -> list[TierCard]:
        """Every readable concept of one tier, by path (shadowed ones and siblings included)."""
        return list(self._by_label[label].cards.values())

    def _same_id(self, concept: TierCard | Match, more_specific: bool) -> list[TierCard]:
        okf_id = concept.okf_id
        labels = (self._above if more_specific else self._below)[concept.tier]
        if not okf_id or not labels:
            return []
        return [c for label in labels for c in self._by_label[label].answering(okf_id)]

    def is_visible(self, concept: TierCard | Match) -> bool:
        return not self._same_id(concept, more_specific=True)

    @cached_property
    def concepts(self) -> list[TierCard]:
        """The visible concepts, most specific tier first, then by path."""
        out: list[TierCard] = []
        above: set[str] = set()  # okf_ids of the more specific tiers
        for at, label in enumerate(self.labels, start=1):
            cards = self.in_tier(label)
            out.extend([c for c in cards if not c.okf_id or c.okf_id not in above] if above else cards)
            if at < len(self.labels):  # the least specific tier hides nothing
                above.update(self._by_label[label].by_okf_id)
        return out

    def shadows(self, concept: TierCard) -> list[TierCard]:
        """Concepts with the same okf_id in less specific tiers (when ``concept`` is visible)."""
        if not self.is_visible(concept) or is_needs_merge(concept.path):
            return []
        return self._same_id(concept, more_specific=False)

    def shadowed_by(self, concept: TierCard) -> TierCard | None:
        """The visible concept that hides ``concept``, if any."""
        above = self._same_id(concept, more_specific=True)
        return above[0] if above else None

    @cached_property
    def knowledge(self) -> list[TierCard]:
        """What projection projects: each valid ``okf_id`` once, from the most specific tier
        (the first by path there). Siblings, flawed cards and concepts without a valid
        ``okf_id`` take no part (see ``unidentified``)."""
        out, _ = self._one_each
        return out

    @cached_property
    def duplicates(self) -> list[Duplicate]:
        """Concepts ``knowledge`` left out because their tier has their ``okf_id`` at an earlier path."""
        _, dropped = self._one_each
        return dropped

    @cached_property
    def _one_each(self) -> tuple[list[TierCard], list[Duplicate]]:
        seen: dict[str, TierCard] = {}
        dropped: list[Duplicate] = []
        for label in self.labels:
            for concept in self.in_tier(label):
                if not _counts(concept) or not okf.is_valid_okf_id(concept.okf_id):
                    continue
                first = seen.get(concept.key)
                if first is None:
                    seen[concept.key] = concept
                elif first.tier == label:
                    dropped.append(Duplicate(first, concept))
        return list(seen.values()), dropped

    def unidentified(self, label: str) -> list[TierCard]:
        """Concepts of one tier that would be knowledge but have no valid ``okf_id``."""
        return [c for c in self.in_tier(label) if _counts(c) and not okf.is_valid_okf_id(c.okf_id)]

    def unusable(self, label: str) -> list[tuple[str, str]]:
        """(path, why) of one tier's concept files that cannot be read or are flawed, by path."""
        tier = self._by_label[label]
        found = {path: why for path, (_, why) in tier.problems.items()}
        found.update((c.path, c.card.flaw) for c in tier.cards.values() if c.card.flaw)
        return sorted(found.items())

    @cached_property
    def by_okf_id(self) -> dict[str, TierCard]:
        """The concept that answers for each ``okf_id``: most specific tier first, then by path
        (siblings and flawed cards never answer)."""
        return self._first_by(lambda c: c.okf_id)

    @cached_property
    def by_origin(self) -> dict[str, TierCard]:
        """The concept captured from each agent's file (``Card.origin_key``: Claude Code's
        file name, or ``gemini-cli:<origin>``), by the same rule; shadowed concepts count
        (their ``okf_id`` leads to the visible one)."""
        return self._first_by(lambda c: c.card.origin_key)

    def _first_by(self, key: Callable[[TierCard], str | None]) -> dict[str, TierCard]:
        out: dict[str, TierCard] = {}
        for label in self.labels:
            for concept in self.in_tier(label):
                value = key(concept)
                if value and _counts(concept):
                    out.setdefault(value, concept)
        return out

    def visible(self, label: str | None, ask: Callable[[TierCards], list[TierCard]]) -> list[TierCard]:
        """What ``ask`` finds in tier ``label`` (shadowed concepts too), or with None in every
        tier, visible ones only: the order of ``in_tier`` and ``concepts``."""
        if label:
            return ask(self._by_label[label])
        return [c for tier in self.tiers for c in ask(tier) if self.is_visible(c)]

    def wiki(self, label: str | None, name: str) -> TierCard | None:
        """What a ``[[name]]`` means in tier ``label`` (None: among every visible concept): the
        first concept whose frontmatter ``name`` is ``name``, else the first whose file stem is."""
        found = self.visible(label, lambda tier: tier.named(name))
        return next((c for c in found if c.card.name == name), None) or next((c for c in found if c.slug == name), None)

    def problems(self) -> list[Hit]:
        """Concept files that cannot be parsed (bad YAML, no frontmatter, a symlink ...)."""
        out = []
        for tier in self.tiers:
            for path, (oid, message) in tier.problems.items():
                out.append(Hit(tier.label, path, oid, None, message))
        return out

    def hit(self, label: str, path: str) -> Hit | None:
        """The blob at ``path`` in tier ``label``, with its card when it is a concept."""
        tier = self._by_label[label]
        concept = tier.card_at(path)
        if concept is not None:
            return concept_hit(concept)
        if path in tier.problems:
            oid, message = tier.problems[path]
            return Hit(label, path, oid, None, message)
        blob = tier.oid(path)
        return Hit(label, path, blob) if blob is not None else None


def _counts(concept: TierCard) -> bool:
    """Knowledge to merge: not a needs-merge sibling, not a flawed card."""
    return not concept.card.flaw and not is_needs_merge(concept.path)


def merged_view(ws: Workspace, scope: str = "all") -> Merged:
    """The tiers ``scope`` selects (default: every active tier) read at HEAD."""
    return Merged([TierCards(tier) for tier in ws.selected(scope)], ws.ctx.now)
