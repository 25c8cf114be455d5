"""Near-duplicate concepts: one fact said twice, found by words (``format.similar``).

Doctor keeps each concept's keys with its facts (``checks.Checked.similar``: a pure function of
the blob, kept in the tier's store and updated from a tree diff, so they cost one parse of each
blob that changed). An ``Index`` holds the keys of the concepts compared (never a deprecated one,
nor a needs-merge sibling) and finds a concept's candidates by them: the concepts sharing one of
its keys. A key more than ``CROWDED`` concepts carry says only that they share a stock claim or
body, and points at none of them. A candidate is scored from its text (``probe_of``), once a run.

Doctor keeps a tier's pairs between runs (``kept_pairs``): the pairs, and the keys crowded, at the
tree they were found at. After a change only the changed concepts are paired again (and those a
key no longer crowded joins), with the result a pass over every concept gives; tests hold it to that.
"""

from __future__ import annotations

import functools
import itertools
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from typing import Any, NamedTuple

from okfgit.errors import OkfError
from okfgit.format import concept as okf
from okfgit.format import lifecycle
from okfgit.format import similar
from okfgit.format.names import is_needs_merge
from okfgit.format.similar import THRESHOLD, Keys, Probe
from okfgit.git.repository import Repo
from okfgit.knowledge.cards import TierCards

CROWDED = 8  # a key more concepts carry than this points at none of them
Key = tuple[str, str]  # (tier label, KB path)


def compared(path: str, meta: dict[str, Any]) -> bool:
    """Whether a concept takes part: a deprecated one is history, a needs-merge sibling a proposal."""
    return not is_needs_merge(path) and not lifecycle.lifecycle(meta).deprecated


def keys_of(path: str, meta: dict[str, Any], body: bytes) -> Keys | None:
    """The keys of a concept already split into frontmatter and body; None when it is not compared."""
    if not compared(path, meta):
        return None
    return similar.keys(_claim(path, meta, body), body)


def probe(path: str, meta: dict[str, Any], body: bytes) -> Probe:
    """What scoring a concept split into frontmatter and body needs (``format.similar.Probe``)."""
    title, description = _title(meta, path), okf.one_line(meta.get("description"))
    return Probe(_claim(path, meta, body), functools.cache(functools.partial(similar.whole, title, description, body)))


def probe_of(path: str, data: bytes) -> Probe | None:
    """``probe`` of a concept blob; None when it is no readable concept."""
    try:
        parsed = okf.parse_concept(data, path)
    except OkfError:
        return None
    return probe(path, parsed.meta, parsed.body)


def _claim(path: str, meta: dict[str, Any], body: bytes) -> tuple[int, ...]:
    return similar.claim(okf.one_line(meta.get("description")),
                         lambda: f"{_title(meta, path)} {okf.first_sentence(body.decode('utf-8', errors='replace'))}")


def _title(meta: dict[str, Any], path: str) -> str:
    return okf.one_line(meta.get("title")) or okf.title_from_path(path)


class Near(NamedTuple):
    """A concept alike enough to another to be the same fact: which, and how alike (0 to 1)."""

    score: float
    key: Key


class Index:
    """The concepts compared (``keys``: each one's ``Keys``), with the postings of their keys:
    of every key, or of ``wanted`` only (a caller that asks about a few concepts needs no more).
    ``blob`` reads a concept's bytes when it is scored."""

    def __init__(self, keys: Mapping[Key, Keys], blob: Callable[[Key], bytes],
                 wanted: Collection[int] | None = None) -> None:
        self.keys = keys
        self._blob = blob
        self._probes: dict[Key, Probe | None] = {}
        self.ident: dict[int, list[Key]] = {}  # key -> the concepts whose claim or body it is the hash of
        self.less: dict[int, list[Key]] = {}  # key -> the concepts whose claim is it and one word more
        asked = None if wanted is None else set(wanted)
        for key, found in keys.items():
            for postings, carried in ((self.ident, found.ident), (self.less, found.less)):
                if asked is None or not asked.isdisjoint(carried):  # most concepts carry none asked for
                    for k in carried if asked is None else asked.intersection(carried):
                        postings.setdefault(k, []).append(key)

    def probe(self, key: Key) -> Probe | None:
        """The concept ``key`` as scoring needs it (read once)."""
        if key not in self._probes:
            self._probes[key] = probe_of(key[1], self._blob(key))
        return self._probes[key]

    def crowded(self) -> set[int]:
        """The keys (of those indexed) of more than ``CROWDED`` concepts' claim or body."""
        return {k for k, found in self.ident.items() if len(found) > CROWDED}

    def _joined(self, k: int) -> set[tuple[Key, Key]]:
        """The pairs (in key order) the key ``k`` joins, none when it is crowded: two concepts
        whose claim or body it is, or one whose claim it is and one whose claim is that and one word more."""
        same = self.ident.get(k, [])
        if len(same) > CROWDED:
            return set()
        return ({(a, b) for a, b in itertools.combinations(sorted(same), 2)}
                | {(min(a, b), max(a, b)) for a in same for b in self.less.get(k, ()) if a != b})

    def candidates(self, found: Keys) -> set[Key]:
        """The concepts a concept whose keys are ``found`` may repeat: those with its claim's words
        or its body, and those whose claim is its one word shorter or longer, through a key not
        crowded."""
        out: set[Key] = set()
        for k in found.ident:
            same = self.ident.get(k, ())
            if len(same) <= CROWDED:
                out.update(same, self.less.get(k, ()))
        for k in found.less:
            same = self.ident.get(k, ())
            if len(same) <= CROWDED:
                out.update(same)
        return out

    def score(self, query: Probe, key: Key) -> float:
        """How alike ``query`` and the concept ``key`` are (0 when it cannot be read)."""
        found = self.probe(key)
        return similar.similarity(query, found) if found is not None else 0.0

    def near(self, keys: Keys, query: Callable[[], Probe], exclude: Collection[Key] = ()) -> list[Near]:
        """The concepts at or above the threshold with a concept whose keys are ``keys`` among
        its ``candidates``, most alike first (then by key); ``query`` makes the concept's
        ``Probe`` (only when a candidate's claim has other words)."""
        found = self.candidates(keys).difference(exclude)
        same = [Near(1.0, key) for key in found if same_claim(keys, self.keys[key])]
        rest = found.difference(near.key for near in same)
        return sorted(same + (self._best(query(), rest, THRESHOLD) if rest else []), key=lambda n: (-n.score, n.key))

    def nearest(self, query: Probe, floor: float, exclude: Collection[Key] = ()) -> list[Near]:
        """Every concept at least ``floor`` alike ``query``, most alike first: each one scored."""
        return self._best(query, (key for key in self.keys if key not in exclude), floor)

    def _best(self, query: Probe, keys: Iterable[Key], floor: float) -> list[Near]:
        out = [Near(round(score, 2), key) for key in keys if (score := self.score(query, key)) >= floor]
        return sorted(out, key=lambda n: (-n.score, n.key))

    def pairs(self, among: Iterable[Key] | None = None) -> list[tuple[float, Key, Key]]:
        """Every near-duplicate pair (score, first key, second key: in key order) with a concept
        of ``among`` in it (each one's ``candidates``); without ``among``, every pair a key of
        the index joins. Each pair is scored once."""
        together: set[tuple[Key, Key]] = set()
        if among is None:
            for k in self.ident.keys() | self.less.keys():
                together.update(self._joined(k))
        else:
            for key in among:
                if key in self.keys:
                    together.update((min(key, o), max(key, o)) for o in self.candidates(self.keys[key]) if o != key)
        return self._scored(together)

    def _scored(self, together: Iterable[tuple[Key, Key]]) -> list[tuple[float, Key, Key]]:
        """The pairs at or above the threshold, each scored once. Scored a group of joined
        concepts at a time, each concept read once and its text dropped after its group: the
        texts held at once are those of one group, not of every concept paired."""
        out = []
        keys = self.keys
        for group in _groups(together):
            probes: dict[Key, Probe | None] = {}

            def probe(key: Key) -> Probe | None:
                if key not in probes:
                    probes[key] = probe_of(key[1], self._blob(key))
                return probes[key]

            for a, b in group:
                if same_claim(keys[a], keys[b]):
                    score = 1.0
                else:
                    first, second = probe(a), probe(b)
                    score = similar.similarity(first, second) if first is not None and second is not None else 0.0
                if score >= THRESHOLD:
                    out.append((round(score, 2), a, b))
        return sorted(out, key=lambda p: (-p[0], p[1], p[2]))


def _groups(pairs: Iterable[tuple[Key, Key]]) -> list[list[tuple[Key, Key]]]:
    """``pairs`` in groups of concepts joined by them (the connected components), in key order."""
    parent: dict[Key, Key] = {}

    def root(key: Key) -> Key:
        while (up := parent.setdefault(key, key)) != key:
            parent[key] = parent.setdefault(up, up)  # halve the path
            key = up
        return key

    ordered = sorted(pairs)
    for a, b in ordered:
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    groups: dict[Key, list[tuple[Key, Key]]] = {}
    for pair in ordered:
        groups.setdefault(root(pair[0]), []).append(pair)
    return list(groups.values())


def same_claim(a: Keys, b: Keys) -> bool:
    """Whether two concepts' claims have the same words (so they are alike 1.0, read or not)."""
    return bool(a.claim) and a.claim == b.claim


def joined(a: Keys, b: Keys, crowded: Collection[int]) -> bool:
    """Whether two concepts whose keys are ``a`` and ``b`` are each other's candidates through a
    key not ``crowded``."""
    links = set(a.ident).intersection(b.ident) | set(a.ident).intersection(b.less) | set(a.less).intersection(b.ident)
    return bool(links.difference(crowded))


class Packed(Mapping[Key, Keys]):
    """The keys of one tier's concepts as doctor's facts keep them (``Keys.packed``, by path;
    None: not compared), each unpacked when asked: a pass over every concept holds one
    concept's keys at a time, not every concept's."""

    def __init__(self, label: str, packed: Mapping[str, str | None]) -> None:
        self.label = label
        self._packed = packed

    def __getitem__(self, key: Key) -> Keys:
        found = self._packed.get(key[1]) if key[0] == self.label else None
        if found is None:
            raise KeyError(key)
        return similar.unpacked(found)

    def __contains__(self, key: object) -> bool:
        return (isinstance(key, tuple) and len(key) == 2 and key[0] == self.label
                and self._packed.get(key[1]) is not None)

    def __iter__(self) -> Iterator[Key]:
        label = self.label
        return ((label, path) for path, found in self._packed.items() if found is not None)

    def __len__(self) -> int:
        return sum(1 for found in self._packed.values() if found is not None)


def across(tiers: Iterable[TierCards], wanted: Callable[[Key], bool] = lambda key: True) -> Index:
    """An index of the concepts compared in ``tiers`` (those ``wanted`` among them)."""
    keys: dict[Key, Keys] = {}
    where: dict[Key, tuple[Repo, str]] = {}
    for tier in tiers:
        for path, (oid, packed) in tier.compared.items():
            key = (tier.label, path)
            if tier.repo is not None and wanted(key):
                keys[key] = similar.unpacked(packed)
                where[key] = (tier.repo, oid)

    def blob(key: Key) -> bytes:
        repo, oid = where[key]
        return repo.read_blob(oid)

    return Index(keys, blob)


class Kept(NamedTuple):
    """A tier's near-duplicate pairs at one KB tree, and the keys crowded there."""

    tree: str
    pairs: list[tuple[float, Key, Key]]
    crowded: set[int]


def kept_pairs(read: Callable[[], Mapping[Key, Keys]], blob: Callable[[Key], bytes], tree: str,
               before: Kept | None = None, changed: Collection[Key] | None = None) -> Kept:
    """Every near-duplicate pair of a tier whose concepts' keys ``read`` gives at ``tree``: from
    ``before`` (the pairs at an earlier tree, from which the concepts ``changed`` changed)
    when given, else from every concept. Unchanged concepts keep their pairs (a pair's score
    is theirs alone) while a key no more than ``CROWDED`` concepts carry still joins them; the
    changed ones are paired again, and so are those a key no longer crowded now joins."""
    if before is not None and before.tree == tree:
        return before  # nothing changed: not even the keys are read
    keys = read()
    if before is None or changed is None:
        # Only a key two concepts share can join them, and a crowded one joins none: the
        # postings of the others alone (so only the concepts a key joins are held as keys).
        counts = Counter(itertools.chain.from_iterable(found.ident for found in keys.values()))
        crowded = {k for k, n in counts.items() if n > CROWDED}
        joining = {k for k, n in counts.items() if 1 < n <= CROWDED}
        joining.update(k for found in keys.values() for k in found.less if k in counts and k not in crowded)
        del counts
        return Kept(tree, Index(keys, blob, joining).pairs(), crowded)
    moved = set(changed)
    again = [key for key in moved if key in keys]
    # A key that neither a changed concept carries nor was crowded has no more concepts than
    # before: it is still not crowded.
    index = Index(keys, blob, before.crowded.union(*(keys[key].ident + keys[key].less for key in again)))
    crowded = index.crowded()
    out = {(a, b): score for score, a, b in index.pairs(again)}
    for score, a, b in before.pairs:
        if a in keys and b in keys and not moved.intersection((a, b)) and joined(keys[a], keys[b], crowded):
            out[(a, b)] = score
    for k in before.crowded - crowded:
        fresh = [pair for pair in index._joined(k) if pair not in out and not moved.intersection(pair)]
        out.update({(a, b): score for score, a, b in index._scored(fresh)})
    return Kept(tree, sorted(((s, a, b) for (a, b), s in out.items()), key=lambda p: (-p[0], p[1], p[2])), crowded)
