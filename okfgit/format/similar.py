"""Near-duplicate text: what a concept says, as a small signature, and how alike two are.

Lexical and local, as the design asks (no embeddings, no service): the words of a concept,
normalised (NFKC, lower case, number words as digits, English function words left out, a light
suffix stemmer, so "Responses are cached for one day" and "response cached 1 day" meet), each
word a 32-bit feature (a hash of its stem). Two views of a concept are compared:

- its **claim**: the words of the one sentence it says: its description, else its title and its
  body's first sentence (a memory's title is made from a file name; its description is what it
  claims);
- its **whole** text: the two-word shingles (each pair of neighbouring words) of its title,
  description and body, as a bottom-``SKETCH`` sketch (the ``SKETCH`` smallest: every shingle of
  a short concept, a uniform sample of a long one).

Two concepts are alike by the larger of the two views' Jaccard similarity (estimated from the
sketches: of the ``SKETCH`` smallest features of both together, the share both have). It is a
function of the two concepts alone, so a pair's score never changes while neither concept does.
``THRESHOLD`` is where a pair is a near-duplicate; spec/okf-format.md §12 states it and the
false-positive rate measured on real bundles.

What is kept of each blob is small and cheap to make, since doctor makes it for every concept:
its ``Keys``, which find its candidates without comparing all pairs (``knowledge/similar.py``):
the hashes of its claim's word set and of its body, and when a claim one word longer would be
alike enough, its claim's hash without each word. So two concepts are compared when their claims
have the same words, or one word more, or their bodies are the same; the two views (``Probe``)
are made from the text when a candidate is scored (two claims with the same words are alike 1.0
without it).
"""

from __future__ import annotations

import binascii
import hashlib
import re
import unicodedata
import zlib
from array import array
from functools import reduce
from itertools import repeat
from operator import xor
from collections.abc import Callable, Iterable
from typing import NamedTuple

THRESHOLD = 0.85  # at or above: a near-duplicate (measured: spec/okf-format.md §12)
SKETCH = 64  # features kept of a view
MIN_FEATURES = 3  # a view with fewer words than this says too little to call two concepts alike
NUMBER_WEIGHT = 3  # a word with a digit in it is often the fact itself: "cached 1 day", "port 8080"

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
# Lower-case ASCII text to words: letters and digits kept, anything else a space (text with
# other characters takes the Unicode way, _words).
_ASCII = bytes(c if 48 <= c <= 57 or 97 <= c <= 122 else 32 for c in range(256))
_WORD = re.compile(r"[^\W_]+")
_LINK_TARGET = re.compile(rb"\]\([^)]*\)")  # a markdown link's target: a path, not words
_URL = re.compile(rb"https?://\S+")
_FEATURE: dict[bytes, int] = {}  # a word as written -> its feature (0: a function word); words recur


class Probe(NamedTuple):
    """What comparing a concept needs: its claim's features and its whole text's sketch (each
    sorted, at most ``SKETCH``; the sketch made when first asked for)."""

    claim: tuple[int, ...]
    whole: Callable[[], tuple[int, ...]]


def stem(word: str) -> str:
    """``word`` without one common English suffix (plural, -ing, -ed, -ation ...), when at least
    three letters remain; numbers as they are."""
    if word.isdigit():
        return word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)] + ("y" if suffix in ("ies", "ied") else "")
    return word


def _words(data: bytes) -> list[bytes]:
    """The lower-case words of ``data`` (runs of letters and digits after NFKC), markdown link
    targets and URLs left out."""
    if b"](" in data:
        data = _LINK_TARGET.sub(b"]", data)
    if b"://" in data:
        data = _URL.sub(b" ", data)
    if data.isascii():  # NFKC leaves ASCII as it is: the same words, without decoding
        return data.lower().translate(_ASCII).split()
    text = unicodedata.normalize("NFKC", data.decode("utf-8", errors="replace")).lower()
    return [word.encode("utf-8") for word in _WORD.findall(text)]


def _feature(word: bytes) -> int:
    """A word's feature: a 32-bit BLAKE2 hash of its stem (not a CRC: the xor of CRCs of
    "0" and "104" is the xor of those of "2" and "106", so sets would hash alike), odd when
    the word has a digit (it weighs ``NUMBER_WEIGHT``), else even; 0 for a function word."""
    plain = word.decode("utf-8")
    plain = NUMBERS.get(plain, plain)
    if plain in STOPWORDS:
        return 0
    found = int.from_bytes(hashlib.blake2b(stem(plain).encode("utf-8"), digest_size=4).digest(), "little") & ~1
    return found | 1 if any(c.isdigit() for c in plain) else found or 2


def _known(word: bytes) -> int:
    """``_feature`` of ``word``, remembered (the memo stops growing at 200,000 words)."""
    found = _FEATURE.get(word)
    if found is None:
        found = _feature(word)
        if len(_FEATURE) < 200_000:
            _FEATURE[word] = found
    return found


def sequence(data: bytes) -> list[int]:
    """The features of the words of ``data`` in order, function words left out."""
    words = _words(data)
    found = list(map(_FEATURE.get, words, repeat(-1)))
    if -1 in found:  # a word not met yet
        found = list(map(_known, words))
    return list(filter(None, found))


def features(data: bytes) -> set[int]:
    """The word features of ``data``."""
    return set(sequence(data))


def claim(description: str, summary: Callable[[], str]) -> tuple[int, ...]:
    """The claim's features: the description's words, with ``summary()``'s (the title and the
    body's first sentence) when the description says too little."""
    found = features(description.encode("utf-8"))
    if len(found) < MIN_FEATURES:
        found |= features(summary().encode("utf-8"))
    return tuple(sorted(found)[:SKETCH])


class Keys(NamedTuple):
    """What finds a concept's near-duplicates (``keys``): the hashes of its claim's word set and
    of its body (0: none; ``ident``: those it has), each matched against the others' same, and
    ``less``, matched against the others' claim: its claim's hash without each word."""

    claim: int
    body: int
    less: tuple[int, ...]
    ident: tuple[int, ...]

    def packed(self) -> str:
        """The keys as what doctor's facts keep: base64 of 32-bit integers (``array("I")``)."""
        return binascii.b2a_base64(array("I", (self.claim, self.body, *self.less)).tobytes(), newline=False).decode()


def _keys(claim: int, body: int, less: tuple[int, ...]) -> Keys:
    # no generator: a pass over every concept unpacks each concept's keys (``unpacked``)
    return Keys(claim, body, less, (claim, body) if claim and body else (claim,) if claim else
                (body,) if body else ())


def unpacked(text: str) -> Keys:
    """``Keys.packed``'s text back to the keys (a pass over every concept unpacks each)."""
    found = array("I")
    found.frombytes(binascii.a2b_base64(text))
    claim, body, *less = found.tolist()
    return _keys(claim, body, tuple(less))


def keys(claimed: tuple[int, ...], body: bytes) -> Keys:
    """The keys of a concept whose claim is ``claimed``: the hash of its claim's word set (the
    xor of its features: one word more or less is one xor away) and of its body (its CRC-32,
    spaces around it left out); and, when a claim one word shorter can be alike enough, the
    claim's hash without each word."""
    text = body.strip()
    hashed = zlib.crc32(text) if text else 0
    if len(claimed) < MIN_FEATURES:
        return _keys(0, hashed, ())
    both = reduce(xor, claimed)
    numbers = sum(map((1).__and__, claimed))  # the odd features: words with a digit
    weight = len(claimed) + (NUMBER_WEIGHT - 1) * numbers
    lightest = 1 if numbers < len(claimed) else NUMBER_WEIGHT
    return _keys(both, hashed, tuple(map(both.__xor__, claimed)) if (weight - lightest) / weight >= THRESHOLD else ())


def whole(title: str, description: str, body: bytes) -> tuple[int, ...]:
    """The whole view of a concept: the ``SKETCH`` smallest of its two-word shingles (each the
    two words' features combined, in either order; odd, and so weighing more, when either is)."""
    words = sequence(b"%s\n%s\n%s" % (title.encode("utf-8"), description.encode("utf-8"), body))
    return tuple(sorted({(a ^ b) & ~1 | (a | b) & 1 for a, b in zip(words, words[1:])})[:SKETCH])


def similarity(a: Probe, b: Probe) -> float:
    """How alike two concepts are, 0 to 1: the larger of their two views' ``view`` (the whole
    texts are not looked at when the claims have the same words)."""
    claimed = view(a.claim, b.claim)
    return claimed if claimed == 1.0 else max(claimed, view(a.whole(), b.whole()))


def view(a: tuple[int, ...], b: tuple[int, ...]) -> float:
    """How alike two sketches are, 0 to 1: of the ``SKETCH`` smallest features of both, the
    weight of those both have over the weight of all (their weighted Jaccard similarity when
    neither was cut); 0 when either has fewer than ``MIN_FEATURES``."""
    if len(a) < MIN_FEATURES or len(b) < MIN_FEATURES:
        return 0.0
    first, second = set(a), set(b)
    among = sorted(first | second)[:SKETCH]
    return _weight((first & second).intersection(among)) / _weight(among)


def _weight(found: Iterable[int]) -> int:
    """The weight of some features: 1 each, ``NUMBER_WEIGHT`` for an odd one (a word with a digit)."""
    return sum(NUMBER_WEIGHT if f & 1 else 1 for f in found)
