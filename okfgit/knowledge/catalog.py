"""A per-concept catalog of one tier's KB tree, kept up to date by tree diffs.

A tier's catalog maps every concept path of its KB tree to a fact that is a pure function
of the blob (and its path). It is kept in the tier repository's store (``local/store.py``:
one row per path, and the KB tree the rows describe), so when one concept changed, only
that blob is read and parsed again (a tree diff between the stored tree and the new one),
and only its row is written again: the cost follows the change, not the KB (DESIGN.md
rule 4). The rows can be deleted at any time; the store never serves rows computed by
other code (``store.code_key``), so facts carry no version of their own.

A run reads a catalog from the store once, keeps what it built in the store's memo (a
capture and the projection after it in one sync share it), and stages what changed; the
caller that opened the store writes it (``Store.save``, ``state.save``).

A ``Kind`` names a catalog and how one blob becomes its fact: the concept record every
reader shares (``cards.CARDS``), the links of its body (``cards.LINKS``), doctor's findings
of each file (``checks.doctor_kind``) and what ``index`` needs of each ``index.md``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Generic, NamedTuple, Protocol, TypeVar

from okfgit.format import concept as okf
from okfgit.errors import OkfError
from okfgit.git.objects import Entry
from okfgit.git.repository import Repo
from okfgit.knowledge.tiers import Tier
from okfgit.local.store import LOOKUP, Row, Store
from okfgit.progress import Progress, silent

# A reader brings the store's facts forward by a tree diff of at most this many paths
# (``forward``); past it, it reads them all.
FORWARD_LIMIT = 256
# Blobs read while building kept for the caller (a first projection writes them next): past
# this many (the memory folder's budget) it reads again the few it writes, rather than hold
# every blob of the knowledge base at once.
KEEP_BLOBS = 10_000

# A fact's JSON as its row keeps it: one encoder for every row (``json.dumps`` makes one a call).
_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


class Fact(Protocol):
    """What every per-blob fact holds: the OID of the blob it was read from."""

    @property
    def oid(self) -> str: ...


F = TypeVar("F", bound=Fact)


class TierCatalog(Generic[F]):
    """Every concept of one tier's KB tree: facts, and the paths that could not be read.

    ``commit`` is the commit the tree was read at (a later reader at that commit needs no
    tree lookup); ``base`` the tree of the stored rows this differs from by ``delta``
    (None: not stored yet). ``reread`` (the paths read from the repository to build it) is
    not saved.
    (A plain class: a dataclass costs every read verb its generated code at import.)
    """

    __slots__ = ("tree", "facts", "problems", "commit", "base", "delta", "reread")

    def __init__(self, tree: str, facts: dict[str, F] | None = None,
                 problems: dict[str, tuple[str, str]] | None = None, commit: str | None = None,
                 base: str | None = None, delta: frozenset[str] = frozenset(), *, reread: int = 0) -> None:
        self.tree = tree
        self.facts: dict[str, F] = {} if facts is None else facts
        self.problems: dict[str, tuple[str, str]] = {} if problems is None else problems  # path -> (oid, why)
        self.commit = commit
        self.base = base
        self.delta = delta
        self.reread = reread

    def __repr__(self) -> str:
        return f"TierCatalog(tree={self.tree!r}, {len(self.facts)} facts, {len(self.problems)} problems)"


class Kind(NamedTuple, Generic[F]):
    """One kind of per-blob fact: its name in the store, how a blob becomes a fact (raising
    OkfError when it is not one), how a fact comes back from its JSON list, and the paths it
    keeps a fact for. ``view``: an SQL expression of the stored JSON for a kind that reads a
    few fields of another's facts (review's nodes of doctor's facts), whose ``from_json``
    takes what it gives. ``lookup``: the row the store's lookup keeps of a path's fact
    (``store.LOOKUP_COLUMNS`` and the words ``search`` matches), for the one kind that has it."""

    name: str
    fact: Callable[[str, str, Entry, bytes], F]
    from_json: Callable[[Any], F]
    wants: Callable[[str], bool] = okf.is_concept_path
    view: str = "value"
    lookup: Callable[[str, F], tuple[Any, ...]] | None = None


def build_kind(kind: Kind[F], repo: Repo, tier: Tier, commit: str, tree: str, cached: TierCatalog[F] | None,
               blobs: dict[str, bytes] | None = None, progress: Progress = silent) -> TierCatalog[F]:
    """The ``kind`` catalog of ``tier`` at ``commit`` (whose KB tree is ``tree``).

    Reuses ``cached`` as is when its tree is ``tree``, updates it from a tree diff when it
    is another tree still in the repository, and reads the whole tree otherwise. The blobs
    read on the way are added to ``blobs`` (OID -> bytes; up to ``KEEP_BLOBS``), so a
    projection that goes on to write the files does not read them twice; without it, none
    is kept (a blob is dropped once its fact is made: what a first doctor at 100,000
    concepts holds at once).
    """
    if cached is not None and cached.tree == tree:
        if cached.commit == commit:
            return cached
        return TierCatalog(tree, cached.facts, cached.problems, commit, cached.base, cached.delta)
    if cached is not None:
        try:
            changes = repo.diff_paths(cached.tree, tree)
        except Exception:  # noqa: BLE001 - a cached tree gc'd away (or any diff failure): read it all
            changes = None
        if changes is not None:
            return _updated(repo, tier, commit, tree, cached, [c.path for c in changes], blobs, kind, progress)
    return _full(repo, tier, commit, tree, blobs, kind, progress)


def _full(repo: Repo, tier: Tier, commit: str, tree: str, blobs: dict[str, bytes] | None, kind: Kind[F],
          progress: Progress = silent) -> TierCatalog[F]:
    """Every path's fact, each blob read as the tree walk comes to it (no list of the tree's
    paths is held). Only when someone watches the progress is the tree walked first to count."""
    out: TierCatalog[F] = TierCatalog(tree, commit=commit)
    wants = kind.wants
    total = sum(1 for path, _ in repo.blobs(commit, tier.prefix) if wants(path)) if progress is not silent else 0
    what = f"reading {tier.label} concepts"
    done = 0
    for path, entry in repo.blobs(commit, tier.prefix):
        out.reread += 1
        if not wants(path):
            continue
        _add(out, repo, tier, path, entry, blobs, kind)
        done += 1
        if total and not done % 100:
            progress(what, done, total)
    progress(what, done, done)
    return out


def forward(kind: Kind[F], repo: Repo, tier: Tier, store: Store, commit: str, tree: str) -> bool:
    """Stage the stored ``kind`` facts of ``tier`` (and their lookup, when it is at the same
    tree) brought from their tree to ``tree`` by a tree diff, reading only the changed blobs
    and holding no other fact: True when staged (at most ``FORWARD_LIMIT`` paths changed)."""
    head = store.head(kind.name, tier.label)
    try:
        changes = repo.diff_paths(head[0], tree) if head is not None else None
    except Exception:  # noqa: BLE001 - the stored tree gc'd away (or any diff failure): not forward
        changes = None
    if head is None or changes is None or len(changes) > FORWARD_LIMIT:
        return False
    built = _updated(repo, tier, commit, tree, TierCatalog(head[0], commit=head[1], base=head[0]),
                     [c.path for c in changes], None, kind)
    remember(kind, store, tier.label, built)
    store.memo.pop((kind.name, kind.view, tier.label), None)  # the changed paths' facts only: no catalog
    return True


def _updated(repo: Repo, tier: Tier, commit: str, tree: str, cached: TierCatalog[F], paths: list[str],
             blobs: dict[str, bytes] | None, kind: Kind[F], progress: Progress = silent) -> TierCatalog[F]:
    out = TierCatalog(tree, dict(cached.facts), dict(cached.problems), commit, cached.base,
                      cached.delta | frozenset(paths), reread=len(paths))
    found = repo.entries_in(tree, [p for p in paths if kind.wants(p)])
    what = f"reading {tier.label} concepts"
    for done, path in enumerate(paths, start=1):
        if not done % 100:
            progress(what, done, len(paths))
        out.facts.pop(path, None)
        out.problems.pop(path, None)
        entry = found.get(path)
        if entry is not None and not entry.is_tree:
            _add(out, repo, tier, path, entry, blobs, kind)
    progress(what, len(paths), len(paths))
    return out


def _add(out: TierCatalog[F], repo: Repo, tier: Tier, path: str, entry: Entry, blobs: dict[str, bytes] | None,
         kind: Kind[F]) -> None:
    try:
        data = b"" if entry.is_link else blobs.get(entry.oid) if blobs is not None else None
        if data is None:
            data = repo.read_blob(entry.oid)
            if blobs is not None and len(blobs) < KEEP_BLOBS:
                blobs[entry.oid] = data
        out.facts[path] = kind.fact(tier.label, path, entry, data)
    except OkfError as exc:
        out.problems[path] = (entry.oid, str(exc))


def load(kind: Kind[F], store: Store, label: str) -> TierCatalog[F] | None:
    """The ``kind`` catalog of tier ``label`` as this run last kept it, else as stored; None
    when there is none (or it cannot be read: it is only a cache)."""
    known: TierCatalog[F] | None = store.memo.get((kind.name, kind.view, label))
    if known is not None:
        return known
    stored = store.catalog(kind.name, label, kind.view)
    if stored is None:
        return None
    try:
        # One parse of every value (a JSON list of lists) costs a third of one parse each.
        values = json.loads("[" + ",".join([value for _, value in stored.facts]) + "]")
        from_json = kind.from_json
        facts = {path: from_json(value) for (path, _), value in zip(stored.facts, values)}
    except (ValueError, KeyError, TypeError, IndexError, AttributeError):
        return None
    problems = {path: (oid, why or "") for path, oid, why in stored.problems}
    out = TierCatalog(stored.tree, facts, problems, stored.commit, stored.tree)
    store.memo[(kind.name, kind.view, label)] = out
    return out


def remember(kind: Kind[F], store: Store, label: str, built: TierCatalog[F],
             stored: Callable[[str], Fact | None] | None = None, lookup: bool = False) -> None:
    """Stage ``built`` (tier ``label``) to be stored: nothing when it is what the store holds,
    the rows of the paths that changed since the stored tree, or every row. ``stored``: the
    fact to store for a path, when ``kind`` is a view of the stored facts (default: ``built``'s).
    The lookup of a kind that has one is kept in step with the rows (when it describes the
    same stored tree), or, with ``lookup``, written whole when it does not."""
    before = store.memo.get((kind.name, kind.view, label))
    store.memo[(kind.name, kind.view, label)] = built
    if kind.lookup is not None:
        _stage_lookup(kind.lookup, store, label, built, lookup)
    if before is built or (before is not None and before.tree == built.tree and before.commit == built.commit
                           and before.base == built.base and before.delta == built.delta):
        return
    base = built.base
    where = sorted(built.delta) if base is not None else sorted(built.facts.keys() | built.problems.keys())
    if stored is not None and any(path in built.facts and stored(path) is None for path in where):
        return  # a view whose stored fact is not at hand: rows that say less would mislead

    def row(path: str) -> Row | None:  # made as it is written: no catalog is held twice, as facts and as text
        if path in built.facts:
            fact = stored(path) if stored is not None else built.facts[path]
            assert fact is not None
            return Row(fact.oid, _encode(fact))
        if path in built.problems:
            oid, why = built.problems[path]
            return Row(oid, None, why)
        return None

    def saved() -> None:  # the stored rows are this catalog's now: later changes count from it
        built.base, built.delta = built.tree, frozenset()

    store.stage_catalog(kind.name, label, built.tree, built.commit, lambda: ((p, row(p)) for p in where), base, saved)


def _stage_lookup(row: Callable[[str, F], tuple[Any, ...]], store: Store, label: str, built: TierCatalog[F],
                  whole: bool) -> None:
    """Stage the lookup rows of ``built``: the changed paths' when the stored lookup describes
    the tree the stored facts do (``built.base``), every path's with ``whole``."""
    at = store.head(LOOKUP, label)
    if at is not None and at[0] == built.tree:
        return
    if at is not None and built.base is not None and at[0] == built.base:
        where, base = sorted(built.delta), built.base
    elif whole:
        where, base = sorted(built.facts), None
    else:
        return
    facts = built.facts
    store.stage_catalog(LOOKUP, label, built.tree, built.commit,
                        lambda: ((path, row(path, facts[path]) if path in facts else None) for path in where), base)
