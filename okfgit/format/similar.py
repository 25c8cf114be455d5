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
feature weighted by how rare it is among the concepts compared (``weight``): sharing "edge",
"TTL" and "86400" says more than sharing "use" and "data". ``THRESHOLD`` is where a pair is a
near-duplicate; spec/okf-format.md states it and the false-positive rate measured on real
bundles. A signature is a pure function of a concept's bytes, so it is cached per blob.
"""

from __future__ import annotations

import base64
import math
import re
import unicodedata
import zlib
from array import array
from collections.abc import Callable, Collection, Iterable
from typing import NamedTuple

THRESHOLD = 0.85  # at or above: a near-duplicate (measured: spec/okf-format.md §10)
SKETCH = 64  # features kept of a concept's whole text
MIN_FEATURES = 3  # a view with fewer words than this says too little to call two concepts alike

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
    """One concept's features, packed (base64 of 32-bit integers: small in a cache of 10,000),
    and whether it takes part at all (a deprecated concept is history: it is not compared)."""

    claim: str
    whole: str
    compared: bool = True

    def features(self) -> Features:
        whole = _unpack(self.whole)
        return Features(frozenset(_unpack(self.claim)), whole, frozenset(whole))


class Features(NamedTuple):
    """A signature unpacked, for comparing: the claim's features, the whole text's sketch
    (sorted) and the same as a set."""

    claim: frozenset[int]
    whole: tuple[int, ...]
    whole_set: frozenset[int]


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
    whole = features(f"{title}\n{description}\n{body}")
    return Signature(_pack(sorted(claim)), _pack(sorted(whole)[:SKETCH]), compared)


def weight(count: int, total: int) -> float:
    """The weight of a feature that ``count`` of ``total`` concepts carry (an unseen one: the most)."""
    return math.log(1.0 + total / max(1, count))


def similarity(a: Features, b: Features, weight_of: Callable[[int], float]) -> float:
    """How alike two concepts are, 0 to 1: the larger of the claim view's weighted Jaccard and
    the whole view's (estimated from the two sketches: the ``SKETCH`` smallest features of both
    together, and the weight of those both have). A view with fewer than ``MIN_FEATURES`` words
    on either side counts 0."""
    best = 0.0
    if len(a.claim) >= MIN_FEATURES and len(b.claim) >= MIN_FEATURES:
        best = _weighted_jaccard(a.claim | b.claim, a.claim, b.claim, weight_of)
    if len(a.whole) >= MIN_FEATURES and len(b.whole) >= MIN_FEATURES:
        union = sorted(a.whole_set | b.whole_set)[:SKETCH]
        best = max(best, _weighted_jaccard(union, a.whole_set, b.whole_set, weight_of))
    return best


def _weighted_jaccard(among: Iterable[int], a: Collection[int], b: Collection[int],
                      weight_of: Callable[[int], float]) -> float:
    """Σ weight of the features ``among`` that both ``a`` and ``b`` have, over Σ weight of ``among``."""
    shared = total = 0.0
    for feature in among:
        w = weight_of(feature)
        total += w
        if feature in a and feature in b:
            shared += w
    return shared / total if total else 0.0


def _pack(values: list[int]) -> str:
    return base64.b64encode(array("I", values).tobytes()).decode("ascii")


def _unpack(text: str) -> tuple[int, ...]:
    out = array("I")
    out.frombytes(base64.b64decode(text))
    return tuple(out)
