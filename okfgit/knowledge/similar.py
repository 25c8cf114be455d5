"""Near-duplicate concepts: one fact said twice, found by words (``format.similar``).

Each concept's ``Signature`` is a pure function of its blob, so it is kept like the cards: one
more per-blob ``catalog.Kind`` (``SIGNATURES``), cached per tier by tree OID and updated from a
tree diff, so what a run computes follows the change, not the size of the knowledge base.

An ``Index`` holds the concepts compared (never a deprecated one, nor a needs-merge sibling) and
finds a concept's near-duplicates without comparing all pairs: the candidates are the concepts
sharing one of its MinHash bands (``format.similar.bands``), those sharing the most bands first,
at most ``VERIFIED`` of them scored; a band more than ``CROWDED`` concepts share says only that
they use the same common words, and points at none of them. ``pairs`` of a whole tier (doctor)
takes the pairs sharing ``PAIRED`` bands of at most ``CROWDED_PAIRS`` concepts. ``nearest``
(``search --similar``, which lists concepts far below the threshold too) scores every concept.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable
from typing import Any, NamedTuple

from okfgit.format import concept as okf
from okfgit.format import lifecycle
from okfgit.format import similar
from okfgit.format.names import is_needs_merge
from okfgit.format.similar import THRESHOLD, Features, Signature
from okfgit.knowledge import catalog
from okfgit.local import paths
from okfgit.git.objects import Entry

VERIFIED = 8  # candidates scored per concept at most: those sharing the most bands
CROWDED = 64  # a band more concepts share than this points at none of them
CROWDED_PAIRS = 8  # ... when every pair of the tier is looked for (doctor): the pairs of a band grow as its square
PAIRED = 3  # the bands two concepts share before every-pair lookup scores them
Key = tuple[str, str]  # (tier label, KB path)


def signature_of(label: str, path: str, entry: Entry, data: bytes) -> Signature:
    """The signature of the concept blob at ``path`` (ValidationError when it is no concept)."""
    parsed = okf.parse_concept(data, f"{label}:{path}", is_link=entry.is_link)
    return signature_from(path, parsed.meta, parsed.body)


def signature_from(path: str, meta: dict[str, Any], raw_body: bytes) -> Signature:
    """The signature of a concept at ``path`` already split into its frontmatter and body."""
    from okfgit.knowledge.cards import title_of

    body = raw_body.decode("utf-8", errors="replace")
    description = okf.one_line(meta.get("description"))
    compared = not is_needs_merge(path) and not lifecycle.lifecycle(meta).deprecated
    return similar.signature(title_of(meta, path), description, body, lambda: okf.first_sentence(body), compared)


def _from_json(value: list[Any]) -> Signature:
    claim, whole, compared, bands = value
    return Signature(str(claim), str(whole), bool(compared), str(bands))


SIGNATURES: catalog.Kind[Signature] = catalog.Kind(paths.SIMILAR, 3, signature_of, _from_json)


class Near(NamedTuple):
    """A concept alike enough to another to be the same fact: which, and how alike (0 to 1)."""

    score: float
    key: Key


class Index:
    """The concepts compared, by key, with what finding their near-duplicates needs: each one's
    bands (``buckets``) and how many carry each feature (``count``: a feature's weight), read
    from the signatures at once; the features themselves unpacked when a concept is scored."""

    def __init__(self, signatures: Iterable[tuple[Key, Signature]], threshold: float = THRESHOLD) -> None:
        self.threshold = threshold
        self.signatures: dict[Key, Signature] = {key: sig for key, sig in signatures if sig.compared}
        self.count: Counter[int] = Counter()
        self.buckets: dict[int, list[Key]] = {}
        for key, sig in self.signatures.items():
            self.count.update(similar.unpack(sig.whole))
            for band in similar.unpack(sig.bands):
                self.buckets.setdefault(band, []).append(key)
        self.total = len(self.signatures)
        self.weights = similar.Weights({f: similar.weight(n, self.total) for f, n in self.count.items()},
                                       similar.weight(0, self.total))
        self._features: dict[Key, Features] = {}
        self._totals: dict[Key, tuple[float, float]] = {}

    def features(self, key: Key) -> Features:
        """The features of the concept ``key`` (unpacked once)."""
        found = self._features.get(key)
        if found is None:
            found = self._features[key] = self.signatures[key].features()
        return found

    def score(self, a: Features, b: Features) -> float:
        """How alike ``a`` and ``b`` are, weighed by this index's concepts."""
        return similar.similarity(a, b, self.weights)

    def near(self, query: Features, exclude: Iterable[Key] = ()) -> list[Near]:
        """The concepts at or above the threshold with ``query``, most alike first (then by key)."""
        hits: Counter[Key] = Counter()
        for band in query.bands:
            found = self.buckets.get(band, ())
            if len(found) <= CROWDED:
                hits.update(found)
        for key in exclude:
            hits.pop(key, None)
        return self._scored(query, (key for key, _ in hits.most_common(VERIFIED)), self.threshold)

    def nearest(self, query: Features, floor: float, exclude: Iterable[Key] = ()) -> list[Near]:
        """Every concept at least ``floor`` alike ``query``, most alike first: each one scored."""
        skip = set(exclude)
        return self._scored(query, (key for key in self.signatures if key not in skip), floor)

    def pairs(self, among: Iterable[Key] | None = None) -> list[tuple[float, Key, Key]]:
        """Every near-duplicate pair (score, first key, second key: in key order) that has a
        concept of ``among`` in it (each looked up as ``near`` does), most alike first. Without
        ``among``, every pair of the index: the pairs sharing at least ``PAIRED`` bands, each
        looked at once (a pair at the threshold shares five of each view's eight on average;
        one whose claims alone are alike is missed one time in twenty-five, and is still found
        by the change that adds it)."""
        out: dict[tuple[Key, Key], float] = {}
        if among is None:
            together: Counter[tuple[Key, Key]] = Counter()
            for found in self.buckets.values():
                if 1 < len(found) <= CROWDED_PAIRS:
                    together.update(itertools.combinations(sorted(found), 2))
            for (a, b), n in together.items():
                if n >= PAIRED:
                    for near in self._scored(self.features(a), (b,), self.threshold):
                        out[(a, b)] = near.score
        else:
            for key in sorted(k for k in set(among) if k in self.signatures):
                for near in self.near(self.features(key), exclude=(key,)):
                    out.setdefault((key, near.key) if key < near.key else (near.key, key), near.score)
        return sorted(((score, *pair) for pair, score in out.items()), key=lambda p: (-p[0], p[1], p[2]))

    def _scored(self, query: Features, keys: Iterable[Key], floor: float) -> list[Near]:
        mine = similar.totals_of(query, self.weights)
        out = []
        for key in keys:
            found = self.features(key)
            theirs = self._totals.get(key)
            if theirs is None:
                theirs = self._totals[key] = similar.totals_of(found, self.weights)
            score = similar.similarity(query, found, self.weights, (mine, theirs))
            if score >= floor:
                out.append(Near(round(score, 2), key))
        return sorted(out, key=lambda n: (-n.score, n.key))


def features_of(path: str, parsed: okf.Parsed) -> Features:
    """The features of a concept that is in no tree yet (a memory as capture would commit it)."""
    return signature_from(path, parsed.meta, parsed.body).features()
