"""Near-duplicate concepts: one fact said twice, found by words (``format.similar``).

Each concept's ``Signature`` is a pure function of its blob, so it is kept like the cards: one
more per-blob ``catalog.Kind`` (``SIGNATURES``), cached per tier by tree OID and updated from a
tree diff, so what a run computes follows the change, not the size of the knowledge base.

An ``Index`` holds the concepts compared (never a deprecated one, nor a needs-merge sibling) and
finds a concept's near-duplicates without comparing all pairs: a pair at or above ``THRESHOLD``
must share at least one of the rarest words that make up the last ``1 - THRESHOLD`` of either
side's weight (prefix filtering), so only the concepts carrying those words are candidates, and
a word more than ``max(64, 1%)`` of the concepts carry is too common to point at one (it is
still weighed in the score). At most ``VERIFIED`` candidates per concept are scored, those
sharing the most of those words first.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any, NamedTuple

from okfgit.errors import OkfError
from okfgit.format import concept as okf
from okfgit.format import lifecycle
from okfgit.format import similar
from okfgit.format.names import is_needs_merge
from okfgit.format.similar import THRESHOLD, Features, Signature
from okfgit.knowledge import catalog
from okfgit.knowledge.tiers import Tier
from okfgit.local import paths
from okfgit.plumbing import FILE_MODE, Entry, Reader

VERIFIED = 32  # candidates scored per concept at most
Key = tuple[str, str]  # (tier label, KB path)


def signature_of(label: str, path: str, entry: Entry, data: bytes) -> Signature:
    """The signature of the concept blob at ``path`` (ValidationError when it is no concept)."""
    from okfgit.knowledge.cards import title_of

    parsed = okf.parse_concept(data, f"{label}:{path}", is_link=entry.is_link)
    meta = parsed.meta
    body = parsed.body.decode("utf-8", errors="replace")
    description = okf.one_line(meta.get("description"))
    compared = not is_needs_merge(path) and not lifecycle.lifecycle(meta).deprecated
    return similar.signature(title_of(meta, path), description, body, lambda: okf.first_sentence(body), compared)


def _from_json(value: list[Any]) -> Signature:
    claim, whole, compared = value
    return Signature(str(claim), str(whole), bool(compared))


SIGNATURES: catalog.Kind[Signature] = catalog.Kind(paths.SIMILAR, 1, signature_of, _from_json)


def signatures_at(repo: Reader, tier: Tier, commit: str | None, tree: str | None = None) -> dict[str, Signature]:
    """Every concept's signature in ``tier`` at ``commit`` (its KB tree ``tree``, when known), by
    KB path: from the cache, updated by a tree diff, kept."""
    if commit is None:
        return {}
    cached = catalog.load_kind(SIGNATURES, repo.common_dir)
    start = cached.get(tier.label)
    if tree is None:
        tree = start.tree if start is not None and start.commit == commit else repo.tree_oid(commit, tier.prefix)
    if tree is None:
        return {}
    built = catalog.build_kind(SIGNATURES, repo, tier, commit, tree, start)
    catalog.remember(SIGNATURES, repo.common_dir, tier.label, built, cached)
    return built.facts


class Near(NamedTuple):
    """A concept alike enough to another to be the same fact: which, and how alike (0 to 1)."""

    score: float
    key: Key


class Index:
    """The concepts compared, by key, with what finding their near-duplicates needs."""

    def __init__(self, signatures: Iterable[tuple[Key, Signature]], threshold: float = THRESHOLD) -> None:
        self.threshold = threshold
        self.features: dict[Key, Features] = {key: sig.features() for key, sig in signatures if sig.compared}
        self.count: Counter[int] = Counter()
        for found in self.features.values():
            self.count.update(found.whole_set)
            if not found.claim <= found.whole_set:
                self.count.update(found.claim - found.whole_set)
        self.total = len(self.features)
        self.cap = max(64, self.total // 100)  # a word more concepts carry points at none of them
        self._weights: dict[int, float] = {}
        self._postings: dict[int, list[Key]] | None = None

    def weight(self, feature: int) -> float:
        found = self._weights.get(feature)
        if found is None:
            found = self._weights[feature] = similar.weight(self.count.get(feature, 0), self.total)
        return found

    def score(self, a: Features, b: Features) -> float:
        return similar.similarity(a, b, self.weight)

    def near(self, query: Features, exclude: Iterable[Key] = ()) -> list[Near]:
        """The concepts at or above the threshold with ``query``, most alike first (then by key)."""
        postings = self._posting_lists()
        if postings.keys().isdisjoint(query.whole_set) and postings.keys().isdisjoint(query.claim):
            return []  # no word of it is rare enough to point at a candidate (most concepts, cheaply)
        skip = set(exclude)
        hits: Counter[Key] = Counter()
        for feature in self._prefix(query):
            for key in postings.get(feature, ()):
                if key not in skip:
                    hits[key] += 1
        out = []
        for key, _ in sorted(hits.items(), key=lambda item: (-item[1], item[0]))[:VERIFIED]:
            score = self.score(query, self.features[key])
            if score >= self.threshold:
                out.append(Near(round(score, 2), key))
        return sorted(out, key=lambda n: (-n.score, n.key))

    def pairs(self, among: Iterable[Key] | None = None) -> list[tuple[float, Key, Key]]:
        """Every near-duplicate pair (score, first key, second key: in key order) that has a
        concept of ``among`` (default: every concept) in it, most alike first."""
        keys = sorted(self.features) if among is None else sorted(k for k in set(among) if k in self.features)
        seen: set[tuple[Key, Key]] = set()
        out = []
        for key in keys:
            for near in self.near(self.features[key], exclude=(key,)):
                pair = (key, near.key) if key < near.key else (near.key, key)
                if pair not in seen:
                    seen.add(pair)
                    out.append((near.score, *pair))
        return sorted(out, key=lambda p: (-p[0], p[1], p[2]))

    def _prefix(self, query: Features) -> set[int]:
        """The rarest features of each view whose weight exceeds ``1 - threshold`` of the view's:
        a concept sharing none of them cannot reach the threshold in that view."""
        out: set[int] = set()
        for view in (query.claim, query.whole_set):
            if len(view) < similar.MIN_FEATURES:
                continue
            ranked = sorted(view, key=lambda f: (-self.weight(f), f))
            room = (1.0 - self.threshold) * sum(self.weight(f) for f in ranked)
            for feature in ranked:
                out.add(feature)
                room -= self.weight(feature)
                if room < 0:
                    break
        return out

    def _posting_lists(self) -> dict[int, list[Key]]:
        """The concepts carrying each feature rare enough to point at a candidate (made once)."""
        if self._postings is None:
            rare = {f for f, n in self.count.items() if n <= self.cap}
            postings: dict[int, list[Key]] = {}
            for key, found in self.features.items():
                for feature in (found.claim | found.whole_set) & rare:
                    postings.setdefault(feature, []).append(key)
            self._postings = postings
        return self._postings


def features_of(label: str, path: str, data: bytes) -> Features | None:
    """The features of a concept's bytes that are in no tree yet (a memory file), or None
    when they make no concept."""
    try:
        sig = signature_of(label, path, Entry("", FILE_MODE), data)
    except OkfError:
        return None
    return sig.features()
