"""Near-duplicate text: what a concept says, as a small signature, and how alike two are.

Lexical and local, as the design asks (no embeddings, no service): the words of a concept,
normalised (NFKC, lower case, number words as digits, English function words left out, a light
suffix stemmer, so "Responses are cached for one day" and "response cached 1 day" meet), each
word a 32-bit feature (CRC-32 of its stem). A ``Signature`` holds two sets of features:

- ``claim``: the words of the one sentence a concept says: its description, else its title and
  its body's first sentence (a memory's title is made from a file name; its description is
  what it claims);
- ``whole``: the words of title, description and body, as a bottom-``SKETCH`` MinHash sketch
  (the ``SKETCH`` smallest features: the whole set for a short concept, a uniform sample of a
  long one), so a signature stays small whatever the concept's size.

Two concepts are alike by the larger of the two views' weighted Jaccard similarity, each
feature weighted by how rare it is among the concepts compared (``weight``: how many of their
whole-text sketches carry it): sharing "edge",
"TTL" and "86400" says more than sharing "use" and "data". ``THRESHOLD`` is where a pair is a
near-duplicate; spec/okf-format.md states it and the false-positive rate measured on real
bundles.

A signature also holds each view's locality-sensitive **bands** (MinHash, ``BANDS`` bands of
``ROWS`` rows per view): two concepts whose view is alike share a band with high probability
(Jaccard 0.85: 99.95%; 0.5: 66%; 0.2: 6%), so the candidates for a near-duplicate are the
concepts sharing a band, found without comparing all pairs. A signature is a pure function of a
concept's bytes, so it is cached per blob.
"""

from __future__ import annotations

import base64
import math
import re
import unicodedata
import zlib
from array import array
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import NamedTuple

THRESHOLD = 0.85  # at or above: a near-duplicate (measured: spec/okf-format.md §12)
SKETCH = 64  # features kept of a concept's whole text
MIN_FEATURES = 3  # a view with fewer words than this says too little to call two concepts alike
BANDS = 8  # MinHash bands per view
ROWS = 3  # features per band: a band is shared when the ROWS smallest under its hash are
_PRIME = (1 << 61) - 1
# One universal hash (a * f + b mod p) per band; fixed, so a cached signature's bands never change.
_HASHES = ((0x5BD1E995, 0x1B873593), (0x85EBCA6B, 0xC2B2AE35), (0x27D4EB2F, 0x165667B1), (0x9E3779B1, 0x7F4A7C15),
           (0xD3A2646C, 0xFD7046C5), (0xB55A4F09, 0x6C8E9CF5), (0x68E31DA4, 0x3243F6A9), (0x1656067D, 0xCC9E2D51))

# Function words: they carry no claim. Negations, quantities and comparisons stay: "not cached"
# and "cached" are not the same fact.
STOPWORDS = frozenset("""
a an the and or but if then else of to in on at by for with from into onto about as is are was were be been
being am do does did done have has had having it its this that these those there here which who whom whose
what when where why how so too very can could should would will shall may might must just also own same such
both each other some i me my we our you your he him his she her they them their us via vs etc e g ie eg
""".split())
NUMBERS = {"zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6",
           "seven": "7", "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12",
           "twenty": "20", "thirty": "30", "hundred": "100", "thousand": "1000", "once": "1", "twice": "2",
           "single": "1", "double": "2", "dozen": "12"}
_SUFFIXES = ("ational", "ization", "fulness", "ousness", "iveness", "ations", "ation", "ments", "ment", "ness",
             "ings", "ing", "edly", "ied", "ed", "ies", "ly", "es", "s")
_WORD = re.compile(r"[^\W_]+")
_LINK_TARGET = re.compile(r"\]\([^)]*\)")  # a markdown link's target: a path, not words
_URL = re.compile(r"https?://\S+")
_MASK = 0xFFFFFFFF


class Signature(NamedTuple):
    """One concept's features and bands, packed (base64 of 32-bit integers: small in a cache of
    10,000), and whether it takes part at all (a deprecated concept is history: it is not compared)."""

    claim: str
    whole: str
    compared: bool = True
    bands: str = ""
    oid: str = ""  # the blob's, when it was read from one (a fact kept by blob: knowledge/catalog.py)

    def features(self) -> Features:
        whole = unpack(self.whole)
        return Features(frozenset(unpack(self.claim)), whole, frozenset(whole), unpack(self.bands))


class Features(NamedTuple):
    """A signature unpacked, for comparing: the claim's features, the whole text's sketch
    (sorted) and the same as a set, and the bands of both views."""

    claim: frozenset[int]
    whole: tuple[int, ...]
    whole_set: frozenset[int]
    bands: tuple[int, ...] = ()


def words(text: str) -> list[str]:
    """The normalised words of ``text``, in order: what two texts are compared by."""
    out = []
    for word in _raw_words(text):
        word = NUMBERS.get(word, word)
        if word not in STOPWORDS:
            out.append(stem(word))
    return out


def _raw_words(text: str) -> list[str]:
    return _WORD.findall(_URL.sub(" ", _LINK_TARGET.sub("]", unicodedata.normalize("NFKC", text).lower())))


def stem(word: str) -> str:
    """``word`` without one common English suffix (plural, -ing, -ed, -ation ...), when at least
    three letters remain; numbers as they are."""
    if word.isdigit():
        return word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)] + ("y" if suffix in ("ies", "ied") else "")
    return word


_FEATURE: dict[str, int | None] = {}  # a word as written -> its feature (None: a stop word); words recur


def features(text: str) -> set[int]:
    """The words of ``text`` as features (each normalised word's CRC-32)."""
    out: set[int] = set()
    known = _FEATURE
    for word in set(_raw_words(text)):
        feature = known.get(word, -1)
        if feature == -1:
            plain = NUMBERS.get(word, word)
            feature = None if plain in STOPWORDS else zlib.crc32(stem(plain).encode("utf-8")) & _MASK
            if len(known) < 200_000:
                known[word] = feature
        if feature is not None:
            out.add(feature)
    return out


def signature(title: str, description: str, body: str, summary: Callable[[], str] = str,
              compared: bool = True) -> Signature:
    """The signature of a concept from its title, description and body text; ``summary`` gives
    the body's first sentence, asked for only when the description says too little."""
    claim = features(description)
    if len(claim) < MIN_FEATURES:
        claim |= features(f"{title} {summary()}")
    whole = sorted(features(f"{title}\n{description}\n{body}"))[:SKETCH]
    return Signature(_pack(sorted(claim)), _pack(whole), compared, _pack(bands(0, claim) + bands(1, whole)))


def bands(view: int, found: Collection[int]) -> list[int]:
    """The ``BANDS`` MinHash bands of one view's features (none for fewer than ``MIN_FEATURES``):
    each the CRC-32 of the view, the band's number and the ``ROWS`` smallest values of the band's
    hash over the features (the hash is one-to-one on 32-bit features, so they name the features)."""
    if len(found) < MIN_FEATURES:
        return []
    out = []
    for number, (a, b) in enumerate(_HASHES):
        rows = sorted([(a * f + b) % _PRIME for f in found])[:ROWS]
        out.append(zlib.crc32(array("Q", [view, number, *rows]).tobytes()) & _MASK)
    return out


def weight(count: int, total: int) -> float:
    """The weight of a feature that ``count`` of ``total`` concepts carry (an unseen one: the most)."""
    return math.log(1.0 + total / max(1, count))


class Weights(NamedTuple):
    """Each feature's weight among the concepts compared, and the weight of one none of them has."""

    known: Mapping[int, float]
    unseen: float

    def total(self, found: Iterable[int]) -> float:
        get, unseen = self.known.get, self.unseen
        return sum(get(f, unseen) for f in found)


def similarity(a: Features, b: Features, weights: Weights,
               totals: tuple[tuple[float, float], tuple[float, float]] | None = None) -> float:
    """How alike two concepts are, 0 to 1: the larger of the claim view's weighted Jaccard and
    the whole view's (estimated from the two sketches: the ``SKETCH`` smallest features of both
    together, and the weight of those both have). A view with fewer than ``MIN_FEATURES`` words
    on either side counts 0. ``totals``: each side's ``totals_of`` when the caller keeps them."""
    ta, tb = totals or (totals_of(a, weights), totals_of(b, weights))
    best = 0.0
    if len(a.claim) >= MIN_FEATURES and len(b.claim) >= MIN_FEATURES:
        shared = weights.total(a.claim & b.claim)
        best = shared / (ta[0] + tb[0] - shared)
    if len(a.whole) >= MIN_FEATURES and len(b.whole) >= MIN_FEATURES:
        if len(a.whole) < SKETCH and len(b.whole) < SKETCH:  # both whole: the exact union
            shared = weights.total(a.whole_set & b.whole_set)
            whole = shared / (ta[1] + tb[1] - shared)
        else:
            among = sorted(a.whole_set | b.whole_set)[:SKETCH]
            both = a.whole_set & b.whole_set
            whole = weights.total(f for f in among if f in both) / weights.total(among)
        best = max(best, whole)
    return best


def totals_of(found: Features, weights: Weights) -> tuple[float, float]:
    """The weight of a concept's claim and of its whole sketch (what ``similarity`` divides by)."""
    return weights.total(found.claim), weights.total(found.whole_set)


def _pack(values: list[int]) -> str:
    """Feature values as base64 of native 32-bit integers (``array("I")``)."""
    return base64.b64encode(array("I", values).tobytes()).decode("ascii")


def unpack(text: str) -> tuple[int, ...]:
    """Packed feature values (``Signature``'s fields) back to integers."""
    out = array("I")
    out.frombytes(base64.b64decode(text))
    return tuple(out)
