"""What the read verbs need to know about each concept, cached per tier by tree diff.

A ``Card`` is one concept as ``ls``, ``cat``, ``links`` and ``search`` see it: its
citation, ``okf_id``, title, description, type, tags, frontmatter ``name``, lifecycle
(``status``, ``superseded_by``, ``stale_after``, read by ``format.lifecycle``) and the links
in its body. Its data (a ``NavFact``) is a pure function of the blob, so it is cached with
projection's machinery (``catalog.build_kind``) in ``<git common dir>/okf/nav.json`` of
the tier's own repository: keyed by tree OID, updated from a tree diff, every fact
carrying its blob OID. A lookup then parses nothing, and a stale or missing cache only
costs the parsing it saves; it can never change an answer. The cache can be deleted at
any time.
"""

from __future__ import annotations

import datetime as dt
from functools import cached_property
from typing import Any, NamedTuple

from okfgit.knowledge import catalog
from okfgit.format import markdown as links
from okfgit.format import concept as okf
from okfgit.format import lifecycle
from okfgit.knowledge.catalog import TierCatalog
from okfgit.errors import OkfError, UsageError
from okfgit.git import Entry, Repo
from okfgit.knowledge.tiers import Tier
from okfgit.local import paths

LINK_MODE = 0o120000
_BLOB_MODES = (0o100644, 0o100755, LINK_MODE)
_SEP = "\0"  # never in a parsed concept body (okf.split refuses NUL), so it can join link fields


class NavFact(NamedTuple):
    """One concept's frontmatter values and links, as the read verbs use them."""

    oid: str
    okf_id: str | None
    title: str
    description: str
    type: str
    tags: list[str]
    name: str  # the frontmatter ``name`` as one line ("" when absent)
    named: bool  # the frontmatter ``name`` is set (not empty)
    head: int  # lines before the body, so link lines count from the top of the file
    links: str  # "kind\0target\0line\0..." for each link of the body, in order
    status: str  # draft | stable | deprecated (stable when absent), or the value as written
    superseded_by: list[str]
    stale_after: str  # the instant it goes stale, as okfgit shows it ("" when none or unreadable)


def nav_fact(label: str, path: str, entry: Entry, data: bytes) -> NavFact:
    """The card data of the blob at ``path``; ValidationError, as ``kb.Snapshot.concept``
    words it, when the file cannot be read as a concept."""
    parsed = okf.parse_concept(data, f"{label}:{path}", is_link=entry.mode == LINK_MODE)
    meta = parsed.meta
    okf_id = meta.get("okf_id")
    raw_tags = meta.get("tags")
    tags = [str(t) for t in raw_tags] if isinstance(raw_tags, list) else [raw_tags] if isinstance(raw_tags, str) else []
    found = links.extract(parsed.body)
    life = lifecycle.lifecycle(meta)
    return NavFact(
        oid=entry.oid,
        okf_id=okf_id if isinstance(okf_id, str) else None,
        title=okf.one_line(meta.get("title")) or okf.title_from_path(path),
        description=okf.one_line(meta.get("description")),
        type=okf.one_line(meta.get("type")),
        tags=tags,
        name=okf.one_line(meta.get("name")),
        named=bool(meta.get("name")),
        head=data[: len(data) - len(parsed.body)].count(b"\n"),
        links=_SEP.join(f"{link.kind}{_SEP}{link.target}{_SEP}{link.line}" for link in found),
        status=life.status,
        superseded_by=list(life.superseded_by),
        stale_after=life.stale_label() or "",
    )


def _from_json(value: list[Any]) -> NavFact:
    return NavFact(*value)


NAV: catalog.Kind[NavFact] = catalog.Kind(paths.NAV, 2, nav_fact, _from_json)  # 2: lifecycle


class Card(NamedTuple):
    """One concept of one tier at HEAD, read from its ``NavFact``."""

    tier: str
    path: str
    fact: NavFact

    @property
    def oid(self) -> str:
        return self.fact.oid

    @property
    def okf_id(self) -> str | None:
        return self.fact.okf_id

    @property
    def title(self) -> str:
        return self.fact.title

    @property
    def description(self) -> str:
        return self.fact.description

    @property
    def type(self) -> str:
        return self.fact.type

    @property
    def tags(self) -> list[str]:
        return list(self.fact.tags)

    @property
    def status(self) -> str:
        return self.fact.status

    @property
    def deprecated(self) -> bool:
        return self.fact.status == lifecycle.DEPRECATED

    @property
    def superseded_by(self) -> list[str]:
        return list(self.fact.superseded_by)

    @property
    def stale_after(self) -> str | None:
        return self.fact.stale_after or None

    def is_stale(self, now: dt.datetime) -> bool:
        """OKF §5.5: stale when now >= stale_after."""
        moment = lifecycle.parse_instant(self.fact.stale_after) if self.fact.stale_after else None
        return moment is not None and now >= moment

    @property
    def slug(self) -> str:
        return self.path.rsplit("/", 1)[-1][:-3]

    @property
    def citation(self) -> str:
        return f"{self.tier}:{self.path}@{self.oid[:7]}"

    def links(self) -> list[links.Link]:
        """The links of the body (line numbers within the body, as ``links.extract`` gives)."""
        if not self.fact.links:
            return []
        parts = self.fact.links.split(_SEP)
        return [links.Link(parts[i], parts[i + 1], int(parts[i + 2])) for i in range(0, len(parts), 3)]


class TierCards:
    """One tier at HEAD: its cards from the cache, and its blobs read on demand."""

    def __init__(self, tier: Tier) -> None:
        self.tier = tier
        self.label = tier.label
        self.repo: Repo | None = tier.open() if tier.exists() else None
        self.commit = self.repo.head_commit() if self.repo else None
        tree = self.repo.tree_oid(self.commit, tier.prefix) if self.repo and self.commit else None
        self.catalog: TierCatalog[NavFact] = _catalog(self.repo, tier, self.commit, tree)

    @cached_property
    def cards(self) -> dict[str, Card]:
        """Every readable concept by path, in path order."""
        return {path: Card(self.label, path, self.catalog.facts[path]) for path in sorted(self.catalog.facts)}

    @cached_property
    def entries(self) -> dict[str, Entry]:
        """Every blob of the tier's KB at HEAD (a walk of the whole tree: only when needed)."""
        return self.repo.tree_entries(self.commit, self.tier.prefix) if self.repo and self.commit else {}

    def oid(self, path: str) -> str | None:
        """The blob OID at ``path``, found without walking the tree when the cache knows it."""
        fact = self.catalog.facts.get(path)
        if fact is not None:
            return fact.oid
        if "entries" in self.__dict__ or self.repo is None or not path:
            entry = self.entries.get(path)
            return entry.oid if entry is not None else None
        found = self.repo.entry_at(self.commit, self.tier.repo_path_of(path))
        return found.oid if found is not None and found.mode in _BLOB_MODES else None

    def blob(self, path: str) -> bytes:
        oid = self.oid(path)
        if oid is None or self.repo is None:
            raise UsageError(f"{self.label}:{path} does not exist")
        return self.repo.read_blob(oid)


def _catalog(repo: Repo | None, tier: Tier, commit: str | None, tree: str | None) -> TierCatalog[NavFact]:
    """The tier's cards at ``tree``: from the cache, updated by a tree diff, saved when worth it."""
    if repo is None or commit is None or tree is None:
        return TierCatalog("")
    cached = catalog.load_kind(NAV, repo.common_dir)
    built = catalog.build_kind(NAV, repo, tier, commit, tree, cached.get(tier.label))
    if tier.label not in cached or built.worth_saving:
        try:
            catalog.save_kind(NAV, repo.common_dir, {**cached, tier.label: built})
        except (OkfError, OSError):
            pass  # only a cache: a read verb never fails for want of writing it
    return built
